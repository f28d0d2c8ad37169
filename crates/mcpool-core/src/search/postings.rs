//! `Postings`: one field of every tool's document as an inverted index
//! (stem → the documents holding it, with each one's BM25 term weight),
//! and `Scores`, a request's scores accumulated by document slot.
//!
//! A request reads each of its terms' posting lists once per field and adds
//! into a dense array, so its cost grows with the postings it meets, not
//! with sorting every match of every term (what the `bm25` crate's
//! `Scorer::matches` did: 5 ms at 5,000 tools, see `docs/benchmarks.md`).
//! The weights are BM25's, computed as that crate computed them, so a
//! ranking is the same to the last bit.

use std::collections::HashMap;

/// One document holding a term.
#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    tf: u32,
    /// BM25's saturated term frequency, normalised by the document's length.
    weight: f32,
}

/// One document's terms in this field (to remove and reweigh it by).
#[derive(Debug, Default)]
struct DocTerms {
    len: u32,
    /// Term ids with their frequency, each term once.
    terms: Vec<(u32, u32)>,
}

/// One field across every document.
#[derive(Debug)]
pub(super) struct Postings {
    /// BM25's length normalisation.
    b: f32,
    /// BM25's term-frequency saturation.
    k1: f32,
    /// The weights are recomputed when the true average length has moved
    /// this far (relative) from the one they were computed with.
    drift: f32,
    ids: HashMap<Box<str>, u32>,
    /// Posting lists by term id, in no order.
    lists: Vec<Vec<Posting>>,
    /// By document slot; `None` for a slot free or empty in this field.
    docs: Vec<Option<DocTerms>>,
    count: usize,
    total_len: usize,
    /// The average length the weights were computed with.
    avgdl: f32,
}

impl Postings {
    pub(super) fn new(b: f32, k1: f32, drift: f32) -> Self {
        Postings {
            b,
            k1,
            drift,
            ids: HashMap::new(),
            lists: Vec::new(),
            docs: Vec::new(),
            count: 0,
            total_len: 0,
            avgdl: 1.0,
        }
    }

    /// Makes `doc` hold exactly `stems` (repeats count).
    pub(super) fn put(&mut self, doc: u32, stems: &[String]) {
        self.remove(doc);
        if stems.is_empty() {
            return;
        }
        let mut terms: Vec<(u32, u32)> = Vec::new();
        for stem in stems {
            let id = match self.ids.get(stem.as_str()) {
                Some(&id) => id,
                None => {
                    let id = self.lists.len() as u32;
                    self.ids.insert(stem.as_str().into(), id);
                    self.lists.push(Vec::new());
                    id
                }
            };
            match terms.iter_mut().find(|(t, _)| *t == id) {
                Some((_, tf)) => *tf += 1,
                None => terms.push((id, 1)),
            }
        }
        let len = stems.len() as u32;
        for &(term, tf) in &terms {
            let weight = self.weight(tf, len);
            self.lists[term as usize].push(Posting { doc, tf, weight });
        }
        let slot = doc as usize;
        if self.docs.len() <= slot {
            self.docs.resize_with(slot + 1, || None);
        }
        self.docs[slot] = Some(DocTerms { len, terms });
        self.count += 1;
        self.total_len += stems.len();
    }

    pub(super) fn remove(&mut self, doc: u32) {
        let Some(old) = self.docs.get_mut(doc as usize).and_then(Option::take) else {
            return;
        };
        for (term, _) in old.terms {
            let list = &mut self.lists[term as usize];
            if let Some(at) = list.iter().position(|p| p.doc == doc) {
                list.swap_remove(at);
            }
        }
        self.count -= 1;
        self.total_len -= old.len as usize;
    }

    /// Reweighs every posting when the average length drifted.
    pub(super) fn refit(&mut self) {
        if self.count == 0 {
            return;
        }
        let avgdl = self.total_len as f32 / self.count as f32;
        let built = self.avgdl;
        if (avgdl - built).abs() <= self.drift * built {
            return;
        }
        self.avgdl = avgdl;
        for list in 0..self.lists.len() {
            for i in 0..self.lists[list].len() {
                let p = self.lists[list][i];
                let len = self.docs[p.doc as usize].as_ref().map_or(0, |d| d.len);
                self.lists[list][i].weight = self.weight(p.tf, len);
            }
        }
    }

    /// BM25's saturated, length-normalised term frequency, in the order of
    /// operations of the `bm25` crate's `Embedder::embed`.
    fn weight(&self, tf: u32, len: u32) -> f32 {
        let tf = tf as f32;
        let numerator = tf * (self.k1 + 1.0);
        let denominator = tf + self.k1 * (1.0 - self.b + self.b * (len as f32 / self.avgdl));
        numerator / denominator
    }

    /// The number of documents that hold `term` in this field.
    pub(super) fn holding(&self, term: &str) -> usize {
        self.ids.get(term).map_or(0, |&id| self.lists[id as usize].len())
    }

    /// Adds `factor` × BM25(`term`) to the score of each document holding
    /// `term` in this field, and marks it as meeting `words`.
    pub(super) fn score(&self, term: &str, factor: f32, words: u64, into: &mut Scores) {
        let Some(list) = self.ids.get(term).map(|&id| &self.lists[id as usize]) else {
            return;
        };
        if list.is_empty() {
            return;
        }
        let df = list.len() as f32;
        let idf = (1f32 + ((self.count as f32 - df + 0.5) / (df + 0.5))).ln();
        for p in list {
            into.add(p.doc, factor * (idf * p.weight), words);
        }
    }
}

/// A request's scores by document slot: the score and which of the
/// request's words the document met.
pub(super) struct Scores {
    /// Score, words met, and whether the document was met at all.
    by_doc: Vec<(f32, u64, bool)>,
    /// The slots met, each once, in the order first met.
    met: Vec<u32>,
}

impl Scores {
    pub(super) fn new(slots: usize) -> Self {
        Scores {
            by_doc: vec![(0.0, 0, false); slots],
            met: Vec::new(),
        }
    }

    fn add(&mut self, doc: u32, score: f32, words: u64) {
        let Some(entry) = self.by_doc.get_mut(doc as usize) else {
            return;
        };
        if !entry.2 {
            entry.2 = true;
            self.met.push(doc);
        }
        entry.0 += score;
        entry.1 |= words;
    }

    /// Each document met, with its score and the words it met.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, f32, u64)> + '_ {
        self.met.iter().map(|&d| {
            let (score, words, _) = self.by_doc[d as usize];
            (d, score, words)
        })
    }
}

#[cfg(test)]
#[path = "postings_tests.rs"]
mod tests;
