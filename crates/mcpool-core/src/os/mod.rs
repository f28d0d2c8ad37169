//! The operating system's rooms: each boundary with the OS is one module
//! with a platform-neutral API and one backend file per platform beside it.

pub mod process;
