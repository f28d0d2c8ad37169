//! A small static embedding model, shipped in the binary: WordLlama's
//! "l2_supercat" token vectors (MIT, github.com/dleemiller/WordLlama), cut
//! to their first 128 dimensions and quantised to int8 per token
//! (`wordllama.bin`, written by `bench/search/embedding/convert.py`). A
//! text's vector is the mean of its tokens' vectors, normalised; its
//! tokens are those of the Llama 2 BPE tokenizer the vectors were trained
//! on (no pre-tokenizer, spaces as `▁`, unknown characters as their
//! bytes), which `tokens` reproduces exactly.
//!
//! It finds tools whose descriptions say what a request means in other
//! words; `plan.rs` fuses its ranking with the index's.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::LazyLock;

/// The dimensions of a vector.
pub const DIM: usize = 128;

const MAGIC: &[u8; 8] = b"MCPWL001";

/// The shipped model (its unit tests read it whole; were it unreadable,
/// every vector would be zeros and search would rank by the index alone).
static MODEL: LazyLock<Option<Model>> = LazyLock::new(|| match Model::parse(include_bytes!("wordllama.bin")) {
    Ok(model) => Some(model),
    Err(e) => {
        tracing::error!("tool search runs without its embedding model: {e}");
        None
    }
});

/// The model's vector of `text`: unit length, or all zeros for a text
/// without tokens.
pub fn embed(text: &str) -> [f32; DIM] {
    MODEL.as_ref().map_or([0.0; DIM], |m| m.embed(text))
}

/// The bytes of the model's token vectors and their scales (kept in the
/// binary's read-only data, not on the heap).
pub fn vector_bytes() -> usize {
    MODEL.as_ref().map_or(0, |m| m.rows.len() + 4 * m.scales.len())
}

/// The cosine of two vectors `embed` made. Summed in eight lanes, which
/// the compiler turns into vector instructions (one running sum cannot
/// be: float addition is not associative); a search takes one per tool.
pub fn cosine(a: &[f32; DIM], b: &[f32; DIM]) -> f32 {
    let mut lanes = [0f32; 8];
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum()
}

struct Model {
    vocab: HashMap<&'static str, u32>,
    /// A pair of adjacent tokens → (the merge's rank, the merged token).
    merges: HashMap<(u32, u32), (u32, u32)>,
    /// The id of the token `<0xXX>` of each byte.
    bytes: [u32; 256],
    scales: Vec<f32>,
    rows: &'static [u8],
}

impl Model {
    fn parse(data: &'static [u8]) -> Result<Model, String> {
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&'static [u8], String> {
            let s = data.get(at..at + n).ok_or("wordllama.bin ends early")?;
            at += n;
            Ok(s)
        };
        if take(8)? != MAGIC {
            return Err("wordllama.bin: not an MCPWL001 file".into());
        }
        let u32_of = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let n = u32_of(take(4)?) as usize;
        let dim = u32_of(take(4)?) as usize;
        let m = u32_of(take(4)?) as usize;
        if dim != DIM {
            return Err(format!("wordllama.bin has {dim} dimensions, not {DIM}"));
        }
        let mut tokens: Vec<&'static str> = Vec::with_capacity(n);
        for _ in 0..n {
            let len = take(2)?;
            let len = u16::from_le_bytes([len[0], len[1]]) as usize;
            tokens.push(std::str::from_utf8(take(len)?).map_err(|e| e.to_string())?);
        }
        let vocab: HashMap<&'static str, u32> = tokens.iter().enumerate().map(|(i, t)| (*t, i as u32)).collect();
        let mut merges = HashMap::with_capacity(m);
        for rank in 0..m {
            let pair = take(8)?;
            let (left, right) = (u32_of(&pair[..4]), u32_of(&pair[4..]));
            let joined = format!(
                "{}{}",
                tokens.get(left as usize).ok_or("a merge's token is out of range")?,
                tokens.get(right as usize).ok_or("a merge's token is out of range")?
            );
            let merged = *vocab.get(joined.as_str()).ok_or("a merge's result is not a token")?;
            merges.insert((left, right), (rank as u32, merged));
        }
        let mut bytes = [0u32; 256];
        for (b, id) in bytes.iter_mut().enumerate() {
            *id = *vocab
                .get(format!("<0x{b:02X}>").as_str())
                .ok_or("a byte has no token")?;
        }
        let scales = take(4 * n)?
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let rows = take(n * DIM)?;
        Ok(Model {
            vocab,
            merges,
            bytes,
            scales,
            rows,
        })
    }

    fn embed(&self, text: &str) -> [f32; DIM] {
        let mut sum = [0f32; DIM];
        for id in self.tokens(text) {
            let scale = self.scales[id as usize];
            let row = &self.rows[id as usize * DIM..(id as usize + 1) * DIM];
            for (s, &v) in sum.iter_mut().zip(row) {
                *s += scale * f32::from(v as i8);
            }
        }
        let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            for s in &mut sum {
                *s /= norm;
            }
        }
        sum
    }

    /// The Llama 2 tokenizer's ids of `text`: `▁` before it and for each
    /// space, each character its token (or its bytes' tokens), then the
    /// merges applied lowest rank first, leftmost first among equals.
    fn tokens(&self, text: &str) -> Vec<u32> {
        if text.is_empty() {
            return Vec::new();
        }
        let mut ids: Vec<u32> = Vec::with_capacity(text.len() + 1);
        let mut buf = [0u8; 4];
        for c in std::iter::once('▁').chain(text.chars().map(|c| if c == ' ' { '▁' } else { c })) {
            let s = c.encode_utf8(&mut buf);
            match self.vocab.get(&*s) {
                Some(&id) => ids.push(id),
                None => ids.extend(s.bytes().map(|b| self.bytes[b as usize])),
            }
        }
        // A doubly linked list over `ids`; a merged-away symbol is `None`.
        let mut symbols: Vec<Option<u32>> = ids.into_iter().map(Some).collect();
        let mut prev: Vec<usize> = (0..symbols.len()).map(|i| i.wrapping_sub(1)).collect();
        let mut next: Vec<usize> = (1..=symbols.len()).collect();
        let mut queue = BinaryHeap::new();
        let push = |queue: &mut BinaryHeap<_>, symbols: &[Option<u32>], i: usize, j: usize| {
            if let (Some(Some(a)), Some(Some(b))) = (symbols.get(i), symbols.get(j)) {
                if let Some(&(rank, merged)) = self.merges.get(&(*a, *b)) {
                    queue.push(Reverse((rank, i, *a, *b, merged)));
                }
            }
        };
        for i in 1..symbols.len() {
            push(&mut queue, &symbols, i - 1, i);
        }
        while let Some(Reverse((_, i, a, b, merged))) = queue.pop() {
            let j = next[i];
            // Stale: one of the pair was merged with something else since.
            if symbols[i] != Some(a) || symbols.get(j).copied().flatten() != Some(b) {
                continue;
            }
            symbols[i] = Some(merged);
            symbols[j] = None;
            next[i] = next[j];
            if let Some(p) = prev.get_mut(next[j]) {
                *p = i;
            }
            push(&mut queue, &symbols, prev[i], i);
            push(&mut queue, &symbols, i, next[i]);
        }
        symbols.into_iter().flatten().collect()
    }
}

/// What a tool's vector is made of: its name in words, the start of its
/// description, and its server's name in words.
pub fn tool_text(server: &str, tool: &str, description: &str) -> String {
    let description: String = description.chars().take(DESCRIPTION_CHARS).collect();
    format!("{}. {description} ({})", in_words(tool), in_words(server))
}

/// How much of a description the vector reads: the start says what the
/// tool does, the rest dilutes it.
const DESCRIPTION_CHARS: usize = 400;

/// `getCurrentTime`, `get_current_time` and `get-current-time` as "get
/// current time".
fn in_words(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut lower_before = false;
    for c in name.chars() {
        if lower_before && c.is_ascii_uppercase() {
            out.push(' ');
        }
        lower_before = c.is_ascii_lowercase();
        match c {
            '_' | '-' => out.push(' '),
            c => out.extend(c.to_lowercase()),
        }
    }
    out
}

#[cfg(test)]
#[path = "embedding_tests.rs"]
mod tests;
