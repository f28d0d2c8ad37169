//! `ToolIndex`: every tool the servers list, as documents of five fields
//! (name, description, parameters, server, what the server says of
//! itself), each field a BM25 index of the `bm25` crate. A request's score
//! for a tool is the weighted sum of its fields' BM25 scores over the
//! request's own words and, at a lower weight, their synonyms. Updated one
//! server at a time, and only the tools whose text changed.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};

use bm25::{Embedder, EmbedderBuilder, Embedding, Scorer, TokenEmbedder, TokenEmbedding};
use rmcp::model::Tool;
use serde_json::Value;

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

/// The weights a search scores with: by default the `Field::weight` table
/// and [`SYNONYM_WEIGHT`]; the search benchmark sets others to tune them on
/// its dev half.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// Name, description, parameters, server, about (the order of `FIELDS`).
    pub fields: [f32; 5],
    pub synonym: f32,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            fields: FIELDS.map(Field::weight),
            synonym: SYNONYM_WEIGHT,
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

/// Splits the index's own text (stems joined by spaces) back into stems.
#[derive(Debug, Default, Clone, Copy)]
struct Spaces;

impl bm25::Tokenizer for Spaces {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        input_text
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }
}

/// One field across every document.
struct FieldIndex {
    field: Field,
    embedder: Embedder<u32, Spaces>,
    scorer: Scorer<u32, u32>,
    /// Each document's stems, joined by spaces (to rebuild from).
    texts: HashMap<u32, String>,
    total_len: usize,
}

impl FieldIndex {
    fn new(field: Field) -> Self {
        FieldIndex {
            field,
            embedder: embedder(field, 1.0),
            scorer: Scorer::new(),
            texts: HashMap::new(),
            total_len: 0,
        }
    }

    fn put(&mut self, id: u32, stems: &[String]) {
        self.remove(id);
        if stems.is_empty() {
            return;
        }
        let text = stems.join(" ");
        self.scorer.upsert(&id, self.embedder.embed(&text));
        self.total_len += stems.len();
        self.texts.insert(id, text);
    }

    fn remove(&mut self, id: u32) {
        if let Some(old) = self.texts.remove(&id) {
            self.total_len -= old.split(' ').count();
            self.scorer.remove(&id);
        }
    }

    /// Re-embeds every document when the average length drifted.
    fn refit(&mut self) {
        if self.texts.is_empty() {
            return;
        }
        let avgdl = self.total_len as f32 / self.texts.len() as f32;
        let built = self.embedder.avgdl();
        if (avgdl - built).abs() <= AVGDL_DRIFT * built {
            return;
        }
        self.embedder = embedder(self.field, avgdl);
        let mut scorer = Scorer::new();
        for (id, text) in &self.texts {
            scorer.upsert(id, self.embedder.embed(text));
        }
        self.scorer = scorer;
    }
}

fn embedder(field: Field, avgdl: f32) -> Embedder<u32, Spaces> {
    EmbedderBuilder::<u32, Spaces>::with_avgdl(avgdl)
        .b(field.b())
        .k1(K1)
        .build()
}

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
}

pub struct ToolIndex {
    words: Words,
    synonyms: Synonyms,
    docs: HashMap<u32, Doc>,
    by_server: BTreeMap<String, BTreeMap<String, u32>>,
    fields: Vec<FieldIndex>,
    next_id: u32,
    weights: Weights,
}

impl Default for ToolIndex {
    fn default() -> Self {
        let words = Words::default();
        let synonyms = Synonyms::new(&words);
        ToolIndex {
            words,
            synonyms,
            docs: HashMap::new(),
            by_server: BTreeMap::new(),
            fields: FIELDS.into_iter().map(FieldIndex::new).collect(),
            next_id: 0,
            weights: Weights::default(),
        }
    }
}

impl ToolIndex {
    /// Scores later searches with `weights` (the benchmark's tuning).
    pub fn set_weights(&mut self, weights: Weights) {
        self.weights = weights;
    }

    /// How the index reads text into words.
    pub fn words(&self) -> &Words {
        &self.words
    }

    /// The number of tools indexed.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
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
                Some(id) if self.docs.get(&id).is_some_and(|d| d.fingerprint == fingerprint) => id,
                Some(id) => {
                    self.put(id, server, about, tool, fingerprint);
                    id
                }
                None => {
                    let id = self.next_id;
                    self.next_id = self.next_id.wrapping_add(1);
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
        self.docs.insert(
            id,
            Doc {
                server: server.to_string(),
                tool: tool.name.to_string(),
                fingerprint,
            },
        );
    }

    fn remove_doc(&mut self, id: u32) {
        for f in &mut self.fields {
            f.remove(id);
        }
        self.docs.remove(&id);
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

    /// The tools that best match `query`, best first, among those `accept`
    /// lets through (server, tool name); at most `limit`.
    pub fn search(&self, query: &str, limit: usize, accept: impl Fn(&str, &str) -> bool) -> Vec<Hit> {
        let mut own = self.words.stems(query);
        own.sort();
        own.dedup();
        own.truncate(64);
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
        let mut scores: HashMap<u32, (f32, u64)> = HashMap::new();
        for (term, (weight, words)) in &terms {
            let q = Embedding(vec![TokenEmbedding {
                index: u32::embed(term),
                value: 1.0,
            }]);
            for (f, field_weight) in self.fields.iter().zip(self.weights.fields) {
                for m in f.scorer.matches(&q) {
                    let entry = scores.entry(m.id).or_default();
                    entry.0 += field_weight * weight * m.score;
                    entry.1 |= words;
                }
            }
        }
        let asked = own.len().max(1) as f32;
        let named = self.servers_named(query);
        let scores = scores.into_iter().map(|(id, (score, words))| {
            // A tool that meets more of the request's words is the likelier one.
            let met = words.count_ones() as f32 / asked;
            let mut score = score * (COVERAGE_FLOOR + (1.0 - COVERAGE_FLOOR) * met);
            if self.docs.get(&id).is_some_and(|d| named.contains(d.server.as_str())) {
                score *= SERVER_NAMED;
            }
            (id, score)
        });
        let mut hits: Vec<Hit> = scores
            .into_iter()
            .filter_map(|(id, score)| {
                let doc = self.docs.get(&id)?;
                accept(&doc.server, &doc.tool).then(|| Hit {
                    server: doc.server.clone(),
                    tool: doc.tool.clone(),
                    score,
                })
            })
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.server.cmp(&b.server))
                .then_with(|| a.tool.cmp(&b.tool))
        });
        hits.truncate(limit);
        hits
    }
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
