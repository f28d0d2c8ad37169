//! The unit tests of `kept`: folds through rmcp's own types and back.

use serde_json::json;

use super::*;

fn folded(mut message: Value) -> Value {
    fold_message(&mut message);
    message
}

#[test]
fn a_tools_execution_and_a_vendors_field_survive_rmcps_parse_and_come_back() {
    let sent = json!({"jsonrpc": "2.0", "id": 1, "result": {
        "tools": [{
            "name": "add", "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "optional"}, "x-vendor": [1, 2],
        }, {
            "name": "plain", "inputSchema": {"type": "object"}, "_meta": {"a": 1},
        }],
        "nextCursor": "c2", "x-page": true,
    }});
    let message = folded(sent.clone());
    let tool = &message["result"]["tools"][0];
    assert_eq!(tool.get("execution"), None, "folded out of rmcp's way");
    assert_eq!(tool["_meta"][KEY]["execution"], json!({"taskSupport": "optional"}));
    assert_eq!(
        message["result"]["tools"][1], sent["result"]["tools"][1],
        "nothing unknown: untouched"
    );
    // Through rmcp's types, as the pool holds it.
    let typed: rmcp::model::ServerJsonRpcMessage = serde_json::from_value(message).unwrap();
    let mut back = serde_json::to_value(&typed).unwrap();
    assert!(unfold(&mut back));
    let tool = &back["result"]["tools"][0];
    assert_eq!(tool["execution"], json!({"taskSupport": "optional"}));
    assert_eq!(tool["x-vendor"], json!([1, 2]));
    assert_eq!(tool.get("_meta"), None, "a _meta only the fold made is gone");
    assert_eq!(back["result"]["tools"][1]["_meta"], json!({"a": 1}));
    assert_eq!(back["result"]["x-page"], json!(true));
    assert_eq!(back["result"]["nextCursor"], json!("c2"));
}

#[test]
fn a_content_blocks_unknown_field_is_kept_and_a_long_text_costs_no_copy_of_its_shape() {
    let sent = json!({"jsonrpc": "2.0", "id": 7, "result": {
        "content": [
            {"type": "text", "text": "y".repeat(100_000), "x-note": "n"},
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        ],
    }});
    let typed: rmcp::model::ServerJsonRpcMessage = serde_json::from_value(folded(sent.clone())).unwrap();
    let mut back = serde_json::to_value(&typed).unwrap();
    unfold(&mut back);
    assert_eq!(back["result"]["content"], sent["result"]["content"]);
}

#[test]
fn a_call_results_unknown_field_is_kept_beside_its_own_meta_and_content() {
    let sent = json!({"jsonrpc": "2.0", "id": 7, "result": {
        "content": [{"type": "text", "text": "x".repeat(1000)}],
        "structuredContent": {"n": 1}, "_meta": {}, "x-trace": "t1",
    }});
    let message = folded(sent.clone());
    assert_eq!(message["result"]["_meta"], json!({KEY: {"x-trace": "t1"}}));
    let mut back = message.clone();
    unfold(&mut back);
    assert_eq!(back, sent, "as sent, its empty _meta too");
}

#[test]
fn what_rmcp_knows_or_cannot_parse_is_not_touched() {
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": false}}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": 5}]}}),
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "x": 1}}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25", "x": 1}}),
    ] {
        assert_eq!(folded(message.clone()), message);
    }
    assert_eq!(fold_text(br#"{"jsonrpc":"2.0","method":"ping","id":1}"#), None);
}

#[test]
fn an_sse_frame_and_a_json_body_are_unfolded_and_others_pass() {
    let message = folded(json!({"jsonrpc": "2.0", "id": 2, "result": {
        "prompts": [{"name": "p", "x-kind": "k"}],
    }}));
    let data = serde_json::to_string(&message).unwrap();
    let frame = format!("id: 3\ndata: {data}\n\n");
    let unfolded = String::from_utf8(unfold_body(frame.as_bytes()).unwrap()).unwrap();
    let (head, rest) = unfolded.split_once("data: ").unwrap();
    assert_eq!(head, "id: 3\n");
    let back: Value = serde_json::from_str(rest.trim_end()).unwrap();
    assert_eq!(back["result"]["prompts"][0]["x-kind"], "k");
    assert!(rest.ends_with("\n\n"));
    let body: Value = serde_json::from_slice(&unfold_body(data.as_bytes()).unwrap()).unwrap();
    assert_eq!(body, back);
    assert_eq!(unfold_body(b"data: {\"jsonrpc\":\"2.0\"}\n\n"), None);
}

#[test]
fn a_2025_11_25_task_result_passes_whole_through_rmcps_types() {
    let created = json!({"jsonrpc": "2.0", "id": 1, "result": {"task": {
        "taskId": "t-1", "status": "working", "createdAt": "2025-11-25T10:30:00Z",
        "lastUpdatedAt": "2025-11-25T10:30:00Z", "ttl": 60000, "pollInterval": 500,
    }}});
    let state = json!({"jsonrpc": "2.0", "id": 2, "result": {
        "taskId": "t-1", "status": "completed", "createdAt": "2025-11-25T10:30:00Z",
        "lastUpdatedAt": "2025-11-25T10:31:00Z", "ttl": 60000, "pollInterval": 500,
    }});
    for sent in [created, state] {
        let typed: rmcp::model::ServerJsonRpcMessage = serde_json::from_value(folded(sent.clone())).unwrap();
        let mut back = serde_json::to_value(&typed).unwrap();
        unfold(&mut back);
        assert_eq!(back, sent);
    }
}

#[test]
fn a_servers_tasks_capability_is_kept_in_experimental_and_put_back() {
    let sent = json!({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}, "tasks": {"list": {}, "requests": {"tools": {"call": {}}}}},
        "serverInfo": {"name": "s", "version": "1"},
    }});
    let message = folded(sent.clone());
    let typed: rmcp::model::ServerJsonRpcMessage = serde_json::from_value(message).unwrap();
    let rmcp::model::ServerJsonRpcMessage::Response(response) = &typed else {
        panic!("{typed:?}")
    };
    let rmcp::model::ServerResult::InitializeResult(init) = &response.result else {
        panic!("{response:?}")
    };
    let kept = kept_capabilities(&init.capabilities).expect("kept");
    assert_eq!(kept["tasks"]["list"], json!({}));
    let mut back = serde_json::to_value(&typed).unwrap();
    unfold(&mut back);
    assert_eq!(back["result"]["capabilities"], sent["result"]["capabilities"]);
}

#[test]
fn an_agents_task_on_a_call_is_kept_in_its_meta() {
    let call =
        br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a","arguments":{},"task":{"ttl":60000}}}"#;
    let folded: Value = serde_json::from_slice(&fold_request(call).unwrap()).unwrap();
    assert_eq!(folded["params"].get("task"), None);
    let typed: rmcp::model::ClientJsonRpcMessage = serde_json::from_value(folded).unwrap();
    let mut back = serde_json::to_value(&typed).unwrap();
    unfold(&mut back);
    assert_eq!(back["params"]["task"], json!({"ttl": 60000}));
    assert_eq!(back["params"].get("_meta"), None);
    let plain = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a"}}"#;
    assert_eq!(fold_request(plain), None);
}

#[test]
fn a_2025_11_25_task_status_notification_is_kept_whole() {
    let params = json!({"taskId": "t-1", "status": "completed", "createdAt": "2025-11-25T10:30:00Z",
        "lastUpdatedAt": "2025-11-25T10:31:00Z", "ttl": 60000, "pollInterval": 500});
    let sent = json!({"jsonrpc": "2.0", "method": TASK_STATUS, "params": params});
    let message = folded(sent);
    assert_eq!(message["params"]["_meta"][KEY][WHOLE], params);
    assert!(
        fold_text(message.to_string().as_bytes()).is_some(),
        "a notification is looked at"
    );
}

#[test]
fn a_key_a_server_or_an_agent_put_there_is_taken_out_however_it_is_written() {
    // A server that would rename its listed tool when it is unfolded.
    let spoof = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{{"name":"a","inputSchema":{{}},"_meta":{{"{KEY}":{{"{WHOLE}":{{"name":"other__b"}}}}}}}}]}}}}"#
    );
    let escaped = spoof
        .replace("io.mcpool/kept", "io.mcpool\\u002fkept")
        .replace("\"result\"", "\"\\u0072esult\"");
    for line in [spoof, escaped] {
        let folded: Value = serde_json::from_slice(&fold_text(line.as_bytes()).expect("taken out")).unwrap();
        let mut back = folded.clone();
        unfold(&mut back);
        assert_eq!(back["result"]["tools"][0]["name"], "a", "{line}");
        assert_eq!(back["result"]["tools"][0]["_meta"], json!({}), "{line}");
    }
    // An agent that would call another tool than the one mcpool checked.
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"safe","_meta":{{"{KEY}":{{"{WHOLE}":{{"name":"off"}}}}}}}}}}"#
    );
    let folded: Value = serde_json::from_slice(&fold_request(call.as_bytes()).expect("taken out")).unwrap();
    assert_eq!(folded["params"], json!({"name": "safe", "_meta": {}}));
    let read = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{{"uri":"a://x","_meta":{{"{KEY}":{{}}}}}}}}"#
    );
    assert!(fold_request(read.as_bytes()).is_some(), "any method");
}

#[test]
fn unknown_fields_nested_in_annotations_an_embedded_resource_icons_and_a_prompts_messages_come_back() {
    let tool = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{
        "name": "t", "inputSchema": {"type": "object", "x-schema": 1},
        "annotations": {"readOnlyHint": true, "x-cost": "low"},
        "icons": [{"src": "https://a/i.png"}, {"src": "https://a/j.png", "x-theme": "dark"}],
    }]}});
    let call = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [
        {"type": "text", "text": "t", "annotations": {"priority": 0.5, "x-weight": 2}},
        {"type": "resource", "resource": {"uri": "a://r", "text": "r".repeat(500), "x-rev": 7,
            "_meta": {"m": 1}}},
    ]}});
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "result": {"messages": [
        {"role": "user", "content": {"type": "text", "text": "hi", "x-tone": "warm"}},
    ]}});
    for sent in [tool, call, prompt] {
        let message = folded(sent.clone());
        let typed: rmcp::model::ServerJsonRpcMessage = serde_json::from_value(message).unwrap();
        let mut back = serde_json::to_value(&typed).unwrap();
        unfold(&mut back);
        assert_eq!(back, sent);
    }
}

#[test]
fn a_nested_field_is_never_put_back_over_one_that_is_there() {
    let mut object = json!({"annotations": {"x": 1}, "icons": [{"src": "a"}]});
    let Value::Object(map) = &mut object else {
        unreachable!()
    };
    let taken = json!({"annotations": {"x": 2, "y": 3}, "icons": [{"src": "b", "z": 4}, {}], "w": 5});
    let Value::Object(taken) = taken else { unreachable!() };
    deep::put_back(map, taken);
    assert_eq!(
        object,
        json!({"annotations": {"x": 1, "y": 3}, "icons": [{"src": "a"}], "w": 5}),
        "a length that differs merges nothing"
    );
}
