//! macOS: the malloc zones' free pages returned to the system
//! (`malloc_zone_pressure_relief` on every zone, what the system itself
//! asks of a process under memory pressure). The program's code pages are
//! left alone: macOS maps them from the dyld shared cache and the binary on
//! demand and takes them back itself.

use std::ffi::c_void;

extern "C" {
    /// libmalloc: frees what it can of `zone` (null: every zone) down to
    /// `goal` bytes (0: all it can); returns the bytes freed.
    fn malloc_zone_pressure_relief(zone: *mut c_void, goal: usize) -> usize;
}

pub(super) fn give_back() {
    // SAFETY: a null zone asks every zone; it takes no other pointer.
    let freed = unsafe { malloc_zone_pressure_relief(std::ptr::null_mut(), 0) };
    tracing::debug!("gave {freed} bytes of free heap back to the system");
}
