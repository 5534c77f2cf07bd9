/* A stand-in for bcryptprimitives.dll, only to run the Windows build under Wine 8.0
 * (Debian 12), which lacks that DLL: Rust's standard library (1.78 and later) takes its
 * random bytes from its ProcessPrng. This one forwards to RtlGenRandom (advapi32's
 * SystemFunction036). Windows 10 and later, and Wine 9, have the real DLL; wine-relay
 * installs this one in its Wine prefix only when Wine has none. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG n = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, n)) {
            return FALSE;
        }
        data += n;
        length -= n;
    }
    return TRUE;
}
