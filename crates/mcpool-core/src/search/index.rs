//! `ToolIndex`: every tool the servers list, as documents of five fields
//! (name, description, parameters, server, what the server says of
//! itself), each field a BM25 inverted index (`postings.rs`). A request's score
//! for a tool is the weighted sum of its fields' BM25 scores over the
//! request's own words and, at lower weights, their synonyms and the
//! expansions learned from the evaluation set's dev half. Updated one
//! server at a time, and only the tools whose text changed.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use rmcp::model::Tool;
use serde_json::Value;

use super::embedding::{self, DIM};
use super::expansions::Expansions;
use super::postings::{Postings, Scores};
use super::synonyms::Synonyms;
use super::words::{split, Words};

/// The fields of a tool's document, with their weight in the score and
/// BM25's length normalisation `b` (short fields barely normalise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// The tool's name split into words, and its title.
    Name,
    Description,
    /// Parameter names (split) and their descriptions.
    Params,
    /// The server's configured name, split.
    Server,
    /// The server's instructions and title.
    About,
}

const FIELDS: [Field; 5] = [
    Field::Name,
    Field::Description,
    Field::Params,
    Field::Server,
    Field::About,
];

impl Field {
    fn weight(self) -> f32 {
        match self {
            Field::Name => 0.625,
            Field::Description => 1.0,
            Field::Params => 0.3,
            Field::Server => 1.5,
            Field::About => 0.19,
        }
    }

    fn b(self) -> f32 {
        match self {
            Field::Name | Field::Server => 0.3,
            Field::Description | Field::Params | Field::About => 0.75,
        }
    }
}

/// The weight of a synonym of a request's word against the word itself.
const SYNONYM_WEIGHT: f32 = 0.47;
/// The weight of a learned expansion of a request's word (`expansions.rs`),
/// chosen on the dev half by `mcpool-bench-search --learn-expansions`.
const EXPANSION_WEIGHT: f32 = 0.2;

/// The weights a search scores with: by default the `Field::weight` table
/// [`SYNONYM_WEIGHT`] and [`EXPANSION_WEIGHT`]; the search benchmark sets others to tune them on
/// its dev half.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// Name, description, parameters, server, about (the order of `FIELDS`).
    pub fields: [f32; 5],
    pub synonym: f32,
    /// 0 leaves the learned expansions out.
    pub expansion: f32,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            fields: FIELDS.map(Field::weight),
            synonym: SYNONYM_WEIGHT,
            expansion: EXPANSION_WEIGHT,
        }
    }
}
/// How much of a score a tool keeps that meets none of a request's words
/// but through its synonyms (the rest grows with the share it meets).
const COVERAGE_FLOOR: f32 = 0.5;
/// The factor of the tools of a server the request names ("… on GitHub").
const SERVER_NAMED: f32 = 1.3;
/// BM25's term-frequency saturation.
const K1: f32 = 1.2;
/// A field's index is rebuilt when its true average length has moved this
/// far (relative) from the one its scores were computed with.
const AVGDL_DRIFT: f32 = 0.25;

/// Which tool a document is, and a hash of the text it was built from.
struct Doc {
    server: String,
    tool: String,
    fingerprint: u64,
}

/// One ranked tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub server: String,
    pub tool: String,
    pub score: f32,
    /// Which of the request's words ([`ToolIndex::asked`], by position)
    /// the tool meets, itself or by a synonym or expansion (none for the
    /// embedding model's hits).
    pub words: u64,
}

pub struct ToolIndex {
    words: Words,
    synonyms: Synonyms,
    expansions: Expansions,
    /// By slot (a document's id); `None` for a free slot.
    docs: Vec<Option<Doc>>,
    /// Free slots, reused before the slots grow.
    free: Vec<u32>,
    by_server: BTreeMap<String, BTreeMap<String, u32>>,
    /// Each field's posting lists, in the order of [`FIELDS`].
    fields: Vec<Postings>,
    /// Each slot's vector of the embedding model (`embedding.rs`).
    vectors: Vec<[f32; DIM]>,
    weights: Weights,
}

impl Default for ToolIndex {
    fn default() -> Self {
        let words = Words::default();
        let synonyms = Synonyms::new(&words);
        ToolIndex {
            words,
            synonyms,
            expansions: Expansions::learned(),
            docs: Vec::new(),
            free: Vec::new(),
            by_server: BTreeMap::new(),
            fields: FIELDS
                .into_iter()
                .map(|f| Postings::new(f.b(), K1, AVGDL_DRIFT))
                .collect(),
            vectors: Vec::new(),
            weights: Weights::default(),
        }
    }
}

impl ToolIndex {
    /// Scores later searches with `weights` (the benchmark's tuning).
    pub fn set_weights(&mut self, weights: Weights) {
        self.weights = weights;
    }

    /// Expands requests' words with `expansions` instead of the shipped
    /// ones (the benchmark's learning).
    pub fn set_expansions(&mut self, expansions: Expansions) {
        self.expansions = expansions;
    }

    /// How the index reads text into words.
    pub fn words(&self) -> &Words {
        &self.words
    }

    /// The number of tools indexed.
    pub fn len(&self) -> usize {
        self.docs.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each field's posting lists.
    #[cfg(test)]
    pub(super) fn postings(&self) -> impl Iterator<Item = &Postings> {
        self.fields.iter()
    }

    fn doc(&self, id: u32) -> Option<&Doc> {
        self.docs.get(id as usize).and_then(Option::as_ref)
    }

    /// Makes the index hold exactly `tools` for `server` (`about`: what the
    /// server says of itself). Tools whose text is unchanged are left as
    /// they are.
    pub fn set_server(&mut self, server: &str, about: &str, tools: &[Tool]) {
        let mut known = self.by_server.remove(server).unwrap_or_default();
        let mut now = BTreeMap::new();
        for tool in tools {
            let fingerprint = fingerprint(about, tool);
            let id = match known.remove(tool.name.as_ref()) {
                Some(id) if self.doc(id).is_some_and(|d| d.fingerprint == fingerprint) => id,
                Some(id) => {
                    self.put(id, server, about, tool, fingerprint);
                    id
                }
                None => {
                    let id = self.free.pop().unwrap_or(self.docs.len() as u32);
                    self.put(id, server, about, tool, fingerprint);
                    id
                }
            };
            now.insert(tool.name.to_string(), id);
        }
        for id in known.into_values() {
            self.remove_doc(id);
        }
        if !now.is_empty() {
            self.by_server.insert(server.to_string(), now);
        }
        for f in &mut self.fields {
            f.refit();
        }
    }

    pub fn remove_server(&mut self, server: &str) {
        self.set_server(server, "", &[]);
    }

    fn put(&mut self, id: u32, server: &str, about: &str, tool: &Tool, fingerprint: u64) {
        let texts = self.field_texts(server, about, tool);
        for (f, stems) in self.fields.iter_mut().zip(texts) {
            f.put(id, &stems);
        }
        let slot = id as usize;
        if self.docs.len() <= slot {
            self.docs.resize_with(slot + 1, || None);
            self.vectors.resize(slot + 1, [0.0; DIM]);
        }
        self.vectors[slot] = embedding::embed(&embedding::tool_text(
            server,
            &tool.name,
            tool.description.as_deref().unwrap_or_default(),
        ));
        self.docs[slot] = Some(Doc {
            server: server.to_string(),
            tool: tool.name.to_string(),
            fingerprint,
        });
    }

    fn remove_doc(&mut self, id: u32) {
        for f in &mut self.fields {
            f.remove(id);
        }
        if self.docs.get_mut(id as usize).and_then(Option::take).is_some() {
            self.free.push(id);
        }
    }

    /// The servers a request names: a word of the request is a word of the
    /// server's name, or the start of one (four letters or more: "mongo"
    /// names `mongodb`).
    fn servers_named(&self, query: &str) -> std::collections::BTreeSet<&str> {
        let asked: Vec<String> = split(query)
            .into_iter()
            .filter(|w| !super::words::is_stop_word(w))
            .collect();
        self.by_server
            .keys()
            .filter(|server| {
                split(server).iter().any(|part| {
                    asked
                        .iter()
                        .any(|w| w == part || (w.chars().count() >= 4 && part.starts_with(w.as_str())))
                })
            })
            .map(String::as_str)
            .collect()
    }

    fn field_texts(&self, server: &str, about: &str, tool: &Tool) -> [Vec<String>; 5] {
        let w = &self.words;
        let mut name = w.stems(&tool.name);
        if let Some(title) = tool
            .title
            .as_deref()
            .or(tool.annotations.as_ref().and_then(|a| a.title.as_deref()))
        {
            name.extend(w.stems(title));
        }
        let description = w.stems(tool.description.as_deref().unwrap_or_default());
        let mut params = Vec::new();
        params_text(&Value::Object((*tool.input_schema).clone()), 0, &mut |text| {
            params.extend(w.stems(text))
        });
        [name, description, params, w.stems(server), w.stems(about)]
    }

    /// The request's words as the index reads them: stems, each once, in
    /// order, at most 64 (a [`Hit`]'s `words` are positions in these).
    pub fn asked(&self, query: &str) -> Vec<String> {
        let mut own = self.words.stems(query);
        own.sort();
        own.dedup();
        own.truncate(64);
        own
    }

    /// The number of tools whose name or description holds `stem` (the
    /// larger of the two).
    pub fn tools_with(&self, stem: &str) -> usize {
        self.fields[..2].iter().map(|f| f.holding(stem)).max().unwrap_or(0)
    }

    /// The number of tools whose name, description, parameters or server
    /// text holds `stem` (the largest of the fields).
    pub fn mentions(&self, stem: &str) -> usize {
        self.fields.iter().map(|f| f.holding(stem)).max().unwrap_or(0)
    }

    /// Whether a server in the index is named `word` (lowercase), or has it
    /// as a part of its name ("jira" of `jira-cloud`).
    pub fn has_server_part(&self, word: &str) -> bool {
        self.by_server
            .keys()
            .any(|server| split(server).iter().any(|part| part == word || part.starts_with(word)))
    }

    /// The tools that best match `query`, best first, among those `accept`
    /// lets through (server, tool name); at most `limit`.
    pub fn search(&self, query: &str, limit: usize, accept: impl Fn(&str, &str) -> bool) -> Vec<Hit> {
        let own = self.asked(query);
        // Each term: its weight, and which of the request's words it stands for.
        let mut terms: BTreeMap<&str, (f32, u64)> = own
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_str(), (1.0, 1 << i)))
            .collect();
        for (i, stem) in own.iter().enumerate() {
            for synonym in self.synonyms.of(stem) {
                let entry = terms.entry(synonym).or_insert((self.weights.synonym, 0));
                entry.1 |= 1 << i;
            }
        }
        if self.weights.expansion > 0.0 {
            for (i, stem) in own.iter().enumerate() {
                for to in self.expansions.of(stem) {
                    let entry = terms.entry(to).or_insert((self.weights.expansion, 0));
                    entry.1 |= 1 << i;
                }
            }
        }
        let mut scores = Scores::new(self.docs.len());
        for (term, (weight, words)) in &terms {
            for (f, field_weight) in self.fields.iter().zip(self.weights.fields) {
                f.score(term, field_weight * weight, *words, &mut scores);
            }
        }
        let asked = own.len().max(1) as f32;
        let named = self.servers_named(query);
        let ranked: Vec<(f32, u64, &Doc)> = scores
            .iter()
            .filter_map(|(id, score, words)| {
                let doc = self.doc(id)?;
                // A tool that meets more of the request's words is the likelier one.
                let met = words.count_ones() as f32 / asked;
                let mut score = score * (COVERAGE_FLOOR + (1.0 - COVERAGE_FLOOR) * met);
                if named.contains(doc.server.as_str()) {
                    score *= SERVER_NAMED;
                }
                accept(&doc.server, &doc.tool).then_some((score, words, doc))
            })
            .collect();
        best(ranked, limit)
    }

    /// The tools whose vectors are nearest `query`'s (cosine), best
    /// first, among those `accept` lets through; at most `limit`. A hit's
    /// score is its cosine.
    pub fn similar(&self, query: &str, limit: usize, accept: impl Fn(&str, &str) -> bool) -> Vec<Hit> {
        let asked = embedding::embed(query);
        if asked == [0.0; DIM] || limit == 0 {
            return Vec::new();
        }
        let mut ranked: Vec<(f32, u64, &Doc)> = self
            .docs
            .iter()
            .zip(&self.vectors)
            .filter_map(|(doc, v)| Some((embedding::cosine(&asked, v), 0, doc.as_ref()?)))
            .collect();
        // `accept` is the pool's view of what this agent may see, dearer
        // than a cosine: ask it of the nearest few, and of more only when
        // too few of those pass.
        let mut want = limit.saturating_mul(4);
        loop {
            let n = want.min(ranked.len());
            if n == 0 {
                return Vec::new();
            }
            if n < ranked.len() {
                ranked.select_nth_unstable_by(n - 1, by_score);
            }
            let mut head = ranked[..n].to_vec();
            head.retain(|(_, _, doc)| accept(&doc.server, &doc.tool));
            if head.len() >= limit || n == ranked.len() {
                return best(head, limit);
            }
            want = want.saturating_mul(4);
        }
    }
}

/// Best score first, ties by server and tool.
fn by_score(a: &(f32, u64, &Doc), b: &(f32, u64, &Doc)) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0)
        .then_with(|| a.2.server.cmp(&b.2.server))
        .then_with(|| a.2.tool.cmp(&b.2.tool))
}

/// The first `limit` of `ranked` by score (ties by server and tool), in
/// order: only those are sorted, not every match.
fn best(mut ranked: Vec<(f32, u64, &Doc)>, limit: usize) -> Vec<Hit> {
    if ranked.len() > limit && limit > 0 {
        ranked.select_nth_unstable_by(limit - 1, by_score);
    }
    ranked.truncate(limit);
    ranked.sort_unstable_by(by_score);
    ranked
        .into_iter()
        .map(|(score, words, doc)| Hit {
            server: doc.server.clone(),
            tool: doc.tool.clone(),
            score,
            words,
        })
        .collect()
}

/// Calls `out` with each parameter's name (split into words) and
/// description, nested objects and array items one level down.
fn params_text(schema: &Value, depth: usize, out: &mut impl FnMut(&str)) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, prop) in props {
        out(&split(name).join(" "));
        if let Some(d) = prop.get("description").and_then(Value::as_str) {
            out(d);
        }
        if depth == 0 {
            params_text(prop, depth + 1, out);
            if let Some(items) = prop.get("items") {
                params_text(items, depth + 1, out);
            }
        }
    }
}

fn fingerprint(about: &str, tool: &Tool) -> u64 {
    let mut h = DefaultHasher::new();
    about.hash(&mut h);
    tool.name.hash(&mut h);
    tool.title.hash(&mut h);
    tool.description.hash(&mut h);
    serde_json::to_string(&tool.input_schema)
        .unwrap_or_default()
        .hash(&mut h);
    tool.annotations.as_ref().and_then(|a| a.title.clone()).hash(&mut h);
    h.finish()
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
