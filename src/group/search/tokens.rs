//! Words out of a tool's definition and out of a query, the same way for
//! both: split at anything but a letter or a digit and at the seams of
//! `camelCase`, lower-cased, common English words dropped, and reduced to
//! their stem by the Snowball English stemmer (`rust-stemmers`), so
//! "repositories", "Repository" and `list_repos`'s "repos" meet.

use rust_stemmers::{Algorithm, Stemmer};

/// Words too common in tool descriptions to tell tools apart.
const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "does",
    "for", "from", "given", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me",
    "my", "of", "on", "or", "should", "so", "some", "that", "the", "their", "them", "then",
    "there", "these", "this", "those", "to", "tool", "use", "used", "using", "want", "was", "we",
    "what", "when", "where", "which", "while", "who", "will", "with", "would", "you", "your",
];

/// Words a person uses for what tools call otherwise, each with the tool
/// words it also looks for (at half weight): a folder is a directory, a
/// bug an issue, to show is to list or get.
const SYNONYMS: &[(&str, &[&str])] = &[
    ("bug", &["issue"]),
    ("display", &["list", "get"]),
    ("download", &["fetch", "get"]),
    ("erase", &["delete"]),
    ("find", &["search"]),
    ("folder", &["directory"]),
    ("folders", &["directory"]),
    ("grab", &["fetch", "get"]),
    ("logged", &["authenticated"]),
    ("look", &["search", "get"]),
    ("make", &["create"]),
    ("photo", &["image"]),
    ("picture", &["image"]),
    ("pr", &["pull", "request"]),
    ("prs", &["pull", "request"]),
    ("read", &["get"]),
    ("remove", &["delete"]),
    ("rename", &["move"]),
    ("show", &["list", "get"]),
    ("ticket", &["issue"]),
];

/// How much a synonym counts beside the word the query has.
const SYNONYM_WEIGHT: f32 = 0.5;

/// The longest word kept: a base64 blob or a hash in a description is not
/// a word anyone searches for.
const MAX_WORD: usize = 40;

/// A tokenizer: holds the stemmer, made once per index or query.
pub(crate) struct Tokens {
    stemmer: Stemmer,
}

impl Tokens {
    pub(crate) fn new() -> Self {
        Tokens {
            stemmer: Stemmer::create(Algorithm::English),
        }
    }

    /// Calls `each` with every word of `text`, stemmed.
    pub(crate) fn each(&self, text: &str, mut each: impl FnMut(String)) {
        for word in words(text) {
            if word.len() > MAX_WORD || STOP_WORDS.binary_search(&word.as_str()).is_ok() {
                continue;
            }
            each(self.stemmer.stem(&word).into_owned());
        }
    }

    /// A query's words, stemmed, each with its weight: the query's own at
    /// 1, their synonyms at half.
    pub(crate) fn query(&self, text: &str) -> Vec<(String, f32)> {
        let mut out = Vec::new();
        for word in words(text) {
            if let Ok(at) = SYNONYMS.binary_search_by(|(from, _)| from.cmp(&word.as_str())) {
                for synonym in SYNONYMS[at].1 {
                    out.push((self.stemmer.stem(synonym).into_owned(), SYNONYM_WEIGHT));
                }
            }
            if word.len() <= MAX_WORD && STOP_WORDS.binary_search(&word.as_str()).is_err() {
                out.push((self.stemmer.stem(&word).into_owned(), 1.0));
            }
        }
        out
    }

    /// Every word of `text`, stemmed, in order.
    #[cfg(test)]
    pub(crate) fn of(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.each(text, |word| out.push(word));
        out
    }
}

/// The lower-cased words of `text`: runs of letters and digits, a run
/// also split where a lower-case letter or a digit meets an upper-case
/// one (`getUserById` is `get user by id`), or an upper-case run meets
/// a capitalised word (`HTTPServer` is `http server`).
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|run| !run.is_empty())
        .flat_map(camel)
}

fn camel(run: &str) -> Vec<String> {
    // Most words have no capital: one word, no seams to look for.
    if !run.chars().any(char::is_uppercase) {
        return vec![run.to_owned()];
    }
    let chars: Vec<char> = run.chars().collect();
    let mut out = Vec::new();
    let mut start = 0;
    for at in 1..chars.len() {
        let (before, here) = (chars[at - 1], chars[at]);
        let next_lower = chars.get(at + 1).is_some_and(|c| c.is_lowercase());
        let seam = (here.is_uppercase() && (before.is_lowercase() || before.is_numeric()))
            || (here.is_uppercase() && before.is_uppercase() && next_lower);
        if seam {
            out.push(chars[start..at].iter().collect::<String>().to_lowercase());
            start = at;
        }
    }
    out.push(chars[start..].iter().collect::<String>().to_lowercase());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_and_synonyms_are_sorted_for_the_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(SYNONYMS.windows(2).all(|pair| pair[0].0 < pair[1].0));
    }

    #[test]
    fn a_query_looks_for_synonyms_at_half_weight() {
        let tokens = Tokens::new();
        assert_eq!(
            tokens.query("make a folder"),
            [
                ("creat".to_owned(), 0.5),
                ("make".to_owned(), 1.0),
                ("directori".to_owned(), 0.5),
                ("folder".to_owned(), 1.0)
            ]
        );
    }

    #[test]
    fn words_split_at_case_and_punctuation_and_are_stemmed() {
        let tokens = Tokens::new();
        assert_eq!(tokens.of("getUserById"), ["get", "user", "id"]);
        assert_eq!(tokens.of("list_repositories"), ["list", "repositori"]);
        assert_eq!(tokens.of("Repository"), ["repositori"]);
        assert_eq!(tokens.of("HTTPServer v2"), ["http", "server", "v2"]);
        assert_eq!(tokens.of("files.read/the-file"), ["file", "read", "file"]);
        assert_eq!(tokens.of("Créer un fichier"), ["créer", "un", "fichier"]);
        assert!(tokens.of(&"x".repeat(41)).is_empty());
        assert!(tokens.of("").is_empty() && tokens.of("__ --").is_empty());
    }
}
