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
