//! Pseudo-terminals that look like a USB serial board: the slave is set to raw 9600 8N1,
//! and a stable symlink named by the user points at it (and is moved to the new slave when
//! the board is unplugged and plugged back in).

use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::pty::{PtyMaster, grantpt, posix_openpt, ptsname_r, unlockpt};
use nix::sys::termios::{BaudRate, SetArg, cfmakeraw, cfsetspeed, tcgetattr, tcsetattr};

use crate::SimError;

/// Puts a terminal in raw mode at 9600 baud, 8 data bits, no parity, one stop bit, no
/// flow control: what a host does to a serial port, and what the simulator does to its
/// slave so that no byte is altered or echoed.
pub fn set_raw_9600<Fd: AsFd>(fd: Fd) -> nix::Result<()> {
    let mut t = tcgetattr(&fd)?;
    cfmakeraw(&mut t);
    cfsetspeed(&mut t, BaudRate::B9600)?;
    t.control_flags
        .remove(nix::sys::termios::ControlFlags::CSTOPB | nix::sys::termios::ControlFlags::CRTSCTS);
    t.control_flags.insert(nix::sys::termios::ControlFlags::CLOCAL | nix::sys::termios::ControlFlags::CREAD);
    t.input_flags.remove(nix::sys::termios::InputFlags::IXON | nix::sys::termios::InputFlags::IXOFF);
    tcsetattr(&fd, SetArg::TCSANOW, &t)
}

/// The board's end of a pty pair.
#[derive(Debug)]
pub struct Pty {
    master: PtyMaster,
    slave_path: PathBuf,
}

impl Pty {
    /// Opens a new pty pair with a raw 9600 8N1 slave.
    pub fn open() -> Result<Pty, SimError> {
        let err = |what: &'static str| move |e: nix::Error| SimError::Pty { what, source: e.into() };
        // Close-on-exec: a child process started later (a host under test, anything else)
        // must not inherit the master. A leaked copy keeps the pty pair alive after the
        // board drops it, so an unplug would never hang up the host's end.
        let master = posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC)
            .map_err(err("posix_openpt"))?;
        fcntl(&master, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(err("fcntl"))?;
        grantpt(&master).map_err(err("grantpt"))?;
        unlockpt(&master).map_err(err("unlockpt"))?;
        let slave_path = PathBuf::from(ptsname_r(&master).map_err(err("ptsname"))?);
        // Open the slave once to set its line discipline; closing it leaves the master
        // in the "no host" (hang-up) state until a host opens the path.
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(OFlag::O_NOCTTY.bits())
            .open(&slave_path)
            .map_err(|e| SimError::Pty { what: "open slave", source: e })?;
        set_raw_9600(&slave).map_err(err("set raw mode"))?;
        drop(slave);
        Ok(Pty { master, slave_path })
    }

    /// The slave's device path (`/dev/pts/N`).
    pub fn slave_path(&self) -> &Path {
        &self.slave_path
    }

    /// True while some process has the slave open (no hang-up on the master).
    pub fn host_present(&self) -> bool {
        let mut fds = [PollFd::new(self.master.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::ZERO) {
            Ok(_) => !fds[0].revents().is_some_and(|r| r.contains(PollFlags::POLLHUP)),
            Err(_) => false,
        }
    }

    /// The master, for polling.
    pub fn master(&self) -> &PtyMaster {
        &self.master
    }

    /// Reads what the host sent (non-blocking).
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        (&self.master).read(buf)
    }

    /// Writes to the host (non-blocking; may write less).
    pub fn write(&self, buf: &[u8]) -> io::Result<usize> {
        (&self.master).write(buf)
    }
}

/// A stable symlink to the current slave of a board.
#[derive(Debug)]
pub struct Link {
    path: PathBuf,
    target: PathBuf,
}

impl Link {
    /// Creates (or moves) `path` to point at `target`, atomically. An existing file that is
    /// not a symlink is never replaced.
    pub fn create(path: &Path, target: &Path) -> Result<Link, SimError> {
        let link_err = |source: io::Error| SimError::Link { path: path.to_path_buf(), source };
        match std::fs::symlink_metadata(path) {
            Ok(m) if !m.file_type().is_symlink() => {
                return Err(link_err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "a file that is not a symlink is in the way",
                )));
            }
            _ => {}
        }
        let name = path.file_name().ok_or_else(|| link_err(io::Error::other("the path has no file name")))?;
        let mut tmp_name = name.to_os_string();
        tmp_name.push(format!(".tmp{}", std::process::id()));
        let tmp = path.with_file_name(tmp_name);
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(target, &tmp).map_err(link_err)?;
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            link_err(e)
        })?;
        Ok(Link { path: path.to_path_buf(), target: target.to_path_buf() })
    }

    /// Points the link at a new target.
    pub fn retarget(&mut self, target: &Path) -> Result<(), SimError> {
        *self = Link::create(&self.path.clone(), target)?;
        Ok(())
    }

    /// The link's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the link (a board unplugged: its device node goes away), unless it has been
    /// pointed elsewhere since (another simulator took the name).
    pub fn remove(&self) {
        if std::fs::read_link(&self.path).is_ok_and(|t| t == self.target) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Makes sure `dir` exists, with a clear error when it cannot be created.
pub fn ensure_dir(dir: &Path) -> Result<(), SimError> {
    std::fs::create_dir_all(dir).map_err(|source| SimError::Link { path: dir.to_path_buf(), source })
}
