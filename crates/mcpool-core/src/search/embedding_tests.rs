use super::*;

/// The ids the Llama 2 tokenizer (Hugging Face `tokenizers`, WordLlama's
/// `l2_supercat_tokenizer_config.json`, no special tokens) gives.
#[test]
fn tokens_are_those_of_the_llama_2_tokenizer() {
    let cases: &[(&str, &[u32])] = &[
        ("create a pull request on GitHub", &[1653, 263, 8206, 2009, 373, 25492]),
        (
            "Open a PR from my feature-branch into main!",
            &[4673, 263, 12089, 515, 590, 4682, 29899, 17519, 964, 1667, 29991],
        ),
        // Characters outside the vocabulary fall back to their bytes.
        (
            "naïve café — 東京 🚀",
            &[
                1055, 30085, 345, 274, 28059, 813, 29871, 30591, 30675, 29871, 243, 162, 157, 131,
            ],
        ),
        (
            "line one\nline\ttwo  spaces",
            &[1196, 697, 13, 1220, 12, 10184, 29871, 8162],
        ),
        (
            "get_current_time: Convert 12:30 PM to UTC+5",
            &[
                679, 29918, 3784, 29918, 2230, 29901, 14806, 29871, 29896, 29906, 29901, 29941, 29900, 11278, 304,
                17998, 29974, 29945,
            ],
        ),
        ("", &[]),
        ("x", &[921]),
    ];
    let Some(model) = MODEL.as_ref() else {
        panic!("the shipped wordllama.bin does not parse");
    };
    for (text, ids) in cases {
        assert_eq!(model.tokens(text), *ids, "{text:?}");
    }
}

/// Cosines the same quantised vectors give in numpy (see
/// `bench/search/embedding/convert.py`).
#[test]
fn vectors_are_unit_means_of_their_tokens() {
    let a = embed("create a pull request on GitHub");
    let b = embed("open a PR from my feature branch into main");
    let c = embed("water the plants on the balcony");
    assert!((cosine(&a, &a) - 1.0).abs() < 1e-4);
    assert!((cosine(&a, &b) - 0.1477).abs() < 2e-3, "{}", cosine(&a, &b));
    assert!((cosine(&a, &c) - 0.0483).abs() < 2e-3, "{}", cosine(&a, &c));
    assert_eq!(embed(""), [0.0; DIM]);
}

#[test]
fn a_tool_reads_as_words() {
    assert_eq!(
        tool_text("azure-devops", "getCurrentTime", "Gets the time."),
        "get current time. Gets the time. (azure devops)"
    );
    assert_eq!(in_words("wit_work_item-write"), "wit work item write");
    let long = "x".repeat(1000);
    assert_eq!(
        tool_text("s", "t", &long).len(),
        "t. ".len() + DESCRIPTION_CHARS + " (s)".len()
    );
}

#[test]
fn a_corrupt_model_is_an_error_not_a_panic() {
    assert!(Model::parse(b"MCPWL001\x01").is_err());
    assert!(Model::parse(b"nonsense").is_err());
}
