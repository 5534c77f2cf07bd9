//! A Linux tty opened with the classic termios calls, where the serial library's termios2
//! calls (`TCGETS2`/`TCSETS2`, which it uses on Linux for any baud rate) are missing: user-
//! mode emulators such as `qemu-aarch64` (7.2 and 10.0) answer them with `ENOSYS` or
//! `ENOTTY`. 9600 baud is a standard rate, so classic termios sets the same line. A real
//! Linux kernel has termios2, and there this is never used.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use nix::fcntl::OFlag;
use nix::sys::termios::{self, BaudRate, ControlFlags, FlushArg, InputFlags, SetArg};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// True for the error the serial library gives where termios2 is missing: `ENOSYS` or
/// `ENOTTY` (it keeps only the errno's description).
pub fn termios2_missing(e: &tokio_serial::Error) -> bool {
    e.kind == tokio_serial::ErrorKind::Unknown
        && [nix::errno::Errno::ENOSYS.desc(), nix::errno::Errno::ENOTTY.desc()]
            .contains(&e.description.as_str())
}

/// Opens `path` non-blocking, raw, 9600 8N1, no flow control, stale input flushed.
pub fn open(path: &Path) -> io::Result<TtyPort> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags((OFlag::O_NOCTTY | OFlag::O_NONBLOCK).bits())
        .open(path)?;
    let mut t = termios::tcgetattr(&file)?;
    termios::cfmakeraw(&mut t);
    termios::cfsetspeed(&mut t, BaudRate::B9600)?;
    t.control_flags.remove(ControlFlags::CSTOPB | ControlFlags::CRTSCTS | ControlFlags::PARENB);
    t.control_flags.insert(ControlFlags::CLOCAL | ControlFlags::CREAD | ControlFlags::CS8);
    t.input_flags.remove(InputFlags::IXON | InputFlags::IXOFF | InputFlags::IXANY);
    termios::tcsetattr(&file, SetArg::TCSANOW, &t)?;
    termios::tcflush(&file, FlushArg::TCIFLUSH)?;
    // `new` is deprecated for types whose descriptor can change under the registration; a
    // `File` owns its one descriptor until it is dropped with the `AsyncFd`, and `register`,
    // the replacement, is `unsafe` (which this crate forbids).
    #[allow(deprecated)]
    let fd = AsyncFd::new(file)?;
    Ok(TtyPort { fd })
}

/// An open tty, read and written without blocking through tokio's reactor.
#[derive(Debug)]
pub struct TtyPort {
    fd: AsyncFd<File>,
}

impl AsyncRead for TtyPort {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match guard.try_io(|f| {
                let mut file: &File = f.get_ref();
                file.read(unfilled)
            }) {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for TtyPort {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.fd.poll_write_ready(cx))?;
            match guard.try_io(|f| {
                let mut file: &File = f.get_ref();
                file.write(buf)
            }) {
                Ok(result) => return Poll::Ready(result),
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
