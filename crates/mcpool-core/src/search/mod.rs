//! Tool search: an index over every tool the servers list (`index.rs`, its
//! BM25 posting lists in `postings.rs`, with `words.rs`, `synonyms.rs` and the
//! learned `expansions.rs`), a small static embedding model whose ranking
//! `plan.rs` fuses with the index's (`embedding.rs`), the meta-tools
//! that agents search and call through (`meta.rs`), the listing modes
//! (`listing.rs`) and the short forms and token estimates of tools
//! (`compact.rs`). Pure: the pool keeps the index current and asks it.

pub mod compact;
pub mod embedding;
pub mod expansions;
pub mod index;
pub mod listing;
pub mod meta;
pub mod plan;
mod postings;
pub mod services;
mod synonyms;
mod words;

pub use expansions::Expansions;
pub use index::{Hit, ToolIndex, Weights};
pub use listing::{Listing, ListingMode, ListingSettings, Sent};
pub use plan::Ranking;
pub use words::{split, Words};
