//! macOS's part of the Unix process trees (`unix.rs` does the rest): macOS
//! has no `close_range`, so the guardian lists the descriptors it holds
//! (`proc_pidinfo` with `PROC_PIDLISTFDS`) and closes those, instead of
//! trying every number up to its limit. Only async-signal-safe calls, into
//! a buffer on the stack: it runs in the freshly forked guardian.

use std::mem::size_of;

/// The most descriptors listed at once; a process holding more gets the
/// close of every number instead.
const MAX_LISTED: usize = 1024;

/// Closes every open descriptor but `keep`; false when the list could not
/// be had whole (the caller then closes every number).
///
/// # Safety
///
/// Closes descriptors others may hold: only for a process that owns all of
/// them (the guardian after its fork).
pub(super) unsafe fn close_listed_but(keep: i32) -> bool {
    let mut listed = [libc::proc_fdinfo {
        proc_fd: 0,
        proc_fdtype: 0,
    }; MAX_LISTED];
    let room = (MAX_LISTED * size_of::<libc::proc_fdinfo>()) as libc::c_int;
    // SAFETY: fills at most `room` bytes of our stack buffer.
    let filled = unsafe {
        libc::proc_pidinfo(
            libc::getpid(),
            libc::PROC_PIDLISTFDS,
            0,
            listed.as_mut_ptr().cast(),
            room,
        )
    };
    // A full buffer may have left some out.
    if filled <= 0 || filled >= room {
        return false;
    }
    let count = filled as usize / size_of::<libc::proc_fdinfo>();
    for fd in listed[..count].iter().map(|f| f.proc_fd).filter(|fd| *fd != keep) {
        // SAFETY: a descriptor of this process, which the caller owns.
        unsafe { libc::close(fd) };
    }
    true
}
