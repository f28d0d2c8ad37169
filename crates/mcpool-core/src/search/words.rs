//! The words of a tool's text as the index sees them: identifiers split at
//! `snake_case`, `camelCase`, `kebab-case` and dots, lowercased, common
//! English words left out, and every word reduced to its English stem
//! (Snowball, through `rust-stemmers`), so "screenshots" finds
//! `take_screenshot`.

use rust_stemmers::{Algorithm, Stemmer};

/// Words that carry no meaning of their own in a request or a tool's text.
/// Short on purpose: "up", "down", "on", "off", "all", "new", "first",
/// "last" and the like name what a tool does ("scroll down", "all issues")
/// and stay in.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "of", "to", "for", "in", "into", "with", "by", "at", "from", "as", "is", "are",
    "was", "were", "be", "been", "being", "it", "its", "this", "that", "these", "those", "there", "here", "i", "me",
    "my", "mine", "we", "our", "us", "you", "your", "yours", "he", "she", "they", "them", "their", "his", "her", "can",
    "could", "would", "should", "will", "shall", "may", "might", "must", "do", "does", "did", "please", "want",
    "wants", "need", "needs", "like", "some", "any", "which", "what", "whats", "who", "whom", "whose", "how", "when",
    "where", "why", "if", "then", "than", "so", "such", "also", "just", "very", "too", "via", "using", "use", "used",
    "uses", "let", "lets", "help", "able", "have", "has", "had", "having", "am", "im", "tool", "tools", "e", "g", "eg",
    "ie", "etc",
];

/// Splits and normalises text into index words (stems).
pub struct Words {
    stemmer: Stemmer,
}

impl Default for Words {
    fn default() -> Self {
        Words {
            stemmer: Stemmer::create(Algorithm::English),
        }
    }
}

impl std::fmt::Debug for Words {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Words")
    }
}

impl Words {
    /// The stems of `text`, in order, repeats kept (term frequency counts).
    pub fn stems(&self, text: &str) -> Vec<String> {
        split(text)
            .into_iter()
            .filter(|w| !is_stop_word(w))
            .map(|w| self.stem(&w))
            .collect()
    }

    /// The stem of one lowercase word.
    pub fn stem(&self, word: &str) -> String {
        if word.chars().any(|c| c.is_ascii_digit()) {
            // "v2", "s3", "ec2": names, not words.
            return word.to_string();
        }
        self.stemmer.stem(word).into_owned()
    }
}

pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// Lowercase words of `text`: split at anything that is not a letter or a
/// digit, at a lower-to-upper case change (`listIssues`), at the end of an
/// upper-case run before a capitalised word (`HTTPRequest` → http,
/// request) and at a digit before an upper-case letter (`s3Bucket`); a
/// word of letters and digits stays whole (`base64`, `ec2`).
pub fn split(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for chunk in text.split(|c: char| !c.is_alphanumeric()) {
        if chunk.is_empty() {
            continue;
        }
        let chars: Vec<char> = chunk.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, cur) = (chars[i - 1], chars[i]);
            let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
            let boundary = ((prev.is_lowercase() || prev.is_numeric()) && cur.is_uppercase())
                || (prev.is_uppercase() && cur.is_uppercase() && next_lower);
            if boundary {
                words.push(lower(&chars[start..i]));
                start = i;
            }
        }
        words.push(lower(&chars[start..]));
    }
    words.retain(|w| !w.is_empty());
    words
}

fn lower(chars: &[char]) -> String {
    chars.iter().flat_map(|c| c.to_lowercase()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(split("browser_take_screenshot"), ["browser", "take", "screenshot"]);
        assert_eq!(split("listIssues"), ["list", "issues"]);
        assert_eq!(split("get-file-contents"), ["get", "file", "contents"]);
        assert_eq!(split("repo.branches.list"), ["repo", "branches", "list"]);
        assert_eq!(split("HTTPRequest"), ["http", "request"]);
        assert_eq!(split("getURLForPR"), ["get", "url", "for", "pr"]);
        assert_eq!(split("github__create_issue"), ["github", "create", "issue"]);
        assert_eq!(split("base64 s3Bucket"), ["base64", "s3", "bucket"]);
        assert_eq!(split("  Ünïcode Straße "), ["ünïcode", "straße"]);
        assert!(split("__ -- ..").is_empty());
    }

    #[test]
    fn stems_drop_stop_words_and_meet_at_one_form() {
        let w = Words::default();
        assert_eq!(w.stems("Take a screenshot of the page"), ["take", "screenshot", "page"]);
        assert_eq!(w.stems("screenshots"), w.stems("screenshot"));
        assert_eq!(w.stems("listing repositories"), w.stems("list_repository"));
        assert_eq!(w.stems("scroll down"), ["scroll", "down"]);
        assert_eq!(w.stems("ec2 v2"), ["ec2", "v2"]);
    }
}
