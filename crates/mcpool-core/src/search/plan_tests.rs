use super::*;

#[test]
fn a_task_splits_into_its_steps() {
    let w = Words::default();
    assert_eq!(
        steps(
            "find the sales figures, draw a bar chart, then save the chart as a PDF",
            &w
        ),
        ["find the sales figures", "draw a bar chart", "save the chart as a PDF"]
    );
    // "chart them" is one word of meaning: it stays with the next step.
    assert_eq!(
        steps("find the sales figures, chart them, save that as a PDF", &w),
        ["find the sales figures", "chart them save that as a PDF"]
    );
    assert_eq!(
        steps("Read the report; and then email it to the team.", &w),
        ["Read the report", "email it to the team"]
    );
    assert_eq!(
        steps("take a screenshot of the page", &w),
        ["take a screenshot of the page"]
    );
    // A clause of one meaningful word stays with its neighbour.
    assert_eq!(steps("Hi, list my open issues", &w), ["Hi list my open issues"]);
    assert!(steps("", &w).is_empty());
}

#[test]
fn steps_are_merged_in_turns() {
    let hit = |tool: &str, score: f32| Hit {
        server: "s".into(),
        tool: tool.into(),
        score,
        words: 1,
    };
    let whole = vec![hit("a", 9.0), hit("b", 8.0)];
    let first = vec![hit("b", 5.0), hit("c", 4.0)];
    let second = vec![hit("d", 1.0), hit("a", 0.5)];
    let merged: Vec<String> = interleave(&[whole, first, second])
        .into_iter()
        .map(|h| h.tool)
        .collect();
    assert_eq!(merged, ["a", "b", "d", "c"]);
}

#[test]
fn the_server_that_fits_the_request_comes_first() {
    let hit = |server: &str, tool: &str, score: f32| Hit {
        server: server.into(),
        tool: tool.into(),
        score,
        words: 1,
    };
    let hits = vec![
        hit("lone", "x", 10.0),
        hit("fits", "a", 9.0),
        hit("fits", "b", 8.0),
        hit("fits", "c", 7.0),
    ];
    let ranked: Vec<String> = by_server(hits.clone(), 1.0).into_iter().map(|h| h.tool).collect();
    assert_eq!(ranked[0], "a");
    let flat: Vec<String> = by_server(hits, 0.0).into_iter().map(|h| h.tool).collect();
    assert_eq!(flat[0], "x");
}

fn catalog() -> ToolIndex {
    let tool = |name: &str, description: &str| {
        rmcp::model::Tool::new(
            name.to_string(),
            description.to_string(),
            std::sync::Arc::new(serde_json::Map::new()),
        )
    };
    let mut index = ToolIndex::default();
    index.set_server(
        "memory",
        "",
        &[
            tool("create_entities", "Create multiple new entities in the knowledge graph"),
            tool(
                "delete_entities",
                "Delete multiple entities and their associated relations from the knowledge graph",
            ),
            tool("read_graph", "Read the entire knowledge graph"),
        ],
    );
    index.set_server(
        "desktop",
        "",
        &[
            tool("start_process", "Start a new terminal process with a command"),
            tool("read_file", "Read the contents of a file from the file system"),
            tool("write_file", "Write text to a file, replacing its contents"),
        ],
    );
    index
}

fn names(hits: Vec<Hit>) -> Vec<String> {
    hits.into_iter().map(|h| format!("{}/{}", h.server, h.tool)).collect()
}

#[test]
fn a_request_in_other_words_finds_its_tool_through_the_embedding_model() {
    let index = catalog();
    let query = "open a document and show what it says";
    let lexical = Ranking {
        semantic: 0.0,
        ..Ranking::default()
    };
    let without = names(search(&index, query, 3, &lexical, |_, _| true));
    let with = names(search(&index, query, 3, &Ranking::default(), |_, _| true));
    assert_eq!(without[0], "desktop/start_process", "{without:?}");
    assert_eq!(with[0], "desktop/read_file", "{with:?}");
    // Nothing shares a word with it and nothing is near enough: no answer.
    assert!(search(&index, "bake a chocolate cake", 3, &Ranking::default(), |_, _| true).is_empty());
}

#[test]
fn nothing_fits_a_request_met_only_by_one_common_word() {
    let few = catalog();
    let small = names(search(
        &few,
        "start the dishwasher in the kitchen",
        5,
        &Ranking::default(),
        |_, _| true,
    ));
    // Six more servers with a tool that starts something: "start" is in
    // seven tools of twelve.
    let mut index = catalog();
    for i in 0..6 {
        let starts = rmcp::model::Tool::new(
            format!("start_job_{i}"),
            format!("Start job number {i}"),
            std::sync::Arc::new(serde_json::Map::new()),
        );
        index.set_server(&format!("jobs{i}"), "", &[starts]);
    }
    let all = |q: &str, common: f32| {
        names(search(
            &index,
            q,
            5,
            &Ranking {
                common,
                ..Ranking::default()
            },
            |_, _| true,
        ))
    };
    // "start" is in seven tools of twelve: common above 1 %, not above 90 %.
    assert_eq!(all("start the dishwasher in the kitchen", 0.01), Vec::<String>::new());
    assert!(!all("start the dishwasher in the kitchen", 0.9).is_empty());
    // Among few tools no word is common.
    assert!(!small.is_empty(), "{small:?}");
    // Two words met, or a short request: it fits.
    let two = all("start a terminal process", 0.01);
    assert!(two.contains(&"desktop/start_process".to_string()), "{two:?}");
    assert!(!all("start it", 0.01).is_empty());
}
