//! One room per boundary with the operating system, each with one backend
//! file per platform beside a portable `mod.rs`: porting mcpool is filling
//! those files (ARCHITECTURE.md names which platform fills which).

pub mod files;
pub mod memory;
pub mod paths;
pub mod power;
pub mod process;
