//! One room per boundary with the operating system, each with one backend
//! file per platform beside a portable `mod.rs`: porting mcpool is filling
//! those files (ARCHITECTURE.md names which platform fills which).

pub mod desktop;
pub mod files;
pub mod keyring;
pub mod memory;
pub mod opener;
pub mod paths;
pub mod power;
pub mod process;
