//! Finding DGT boards among the machine's serial devices.

use std::path::PathBuf;

/// USB vendor ids of DGT e-boards: DGT's own (0x2D80) and the 0x045B seen in Android
/// apps for current boards, and FTDI's (0x0403, product 0x6001) of older USB boards. FTDI
/// adapters are also used for other things: they are tried, and a port whose device does
/// not answer the handshake is only logged.
pub const DGT_USB_IDS: [(u16, Option<u16>); 3] = [(0x2D80, None), (0x045B, None), (0x0403, Some(0x6001))];

/// What kind of serial device a port is, as discovery sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// A USB serial device with a DGT board's (or its FTDI adapter's) vendor id.
    DgtUsb {
        /// Vendor id.
        vid: u16,
        /// Product id.
        pid: u16,
    },
    /// A Bluetooth RFCOMM port (a Bluetooth board bound to it).
    Bluetooth,
}

/// The serial devices where DGT boards appear, from the operating system's list of serial
/// ports (`serialport`'s enumeration: on Linux `/sys/class/tty`, with each USB device's
/// vendor and product ids): USB devices with a DGT id ([`DGT_USB_IDS`]) and Bluetooth
/// RFCOMM ports. Other serial ports (a modem, a GPS, the machine's UARTs) are left alone.
pub fn discover_ports() -> Vec<(PathBuf, DeviceKind)> {
    // The enumeration panics on a machine without /sys/class/tty (some containers).
    if cfg!(target_os = "linux") && !std::path::Path::new("/sys/class/tty").is_dir() {
        return Vec::new();
    }
    let ports = match tokio_serial::available_ports() {
        Ok(p) => p,
        Err(e) => {
            tracing::debug!(error = %e, "cannot list serial ports");
            return Vec::new();
        }
    };
    let mut out: Vec<(PathBuf, DeviceKind)> = ports
        .into_iter()
        .filter_map(|p| {
            let kind = match p.port_type {
                tokio_serial::SerialPortType::UsbPort(u)
                    if DGT_USB_IDS
                        .iter()
                        .any(|&(vid, pid)| u.vid == vid && pid.is_none_or(|pid| u.pid == pid)) =>
                {
                    DeviceKind::DgtUsb { vid: u.vid, pid: u.pid }
                }
                tokio_serial::SerialPortType::BluetoothPort => DeviceKind::Bluetooth,
                _ => return None,
            };
            Some((PathBuf::from(p.port_name), kind))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}
