//! The texts of a definition a model reads, and where each one is: the
//! name, title and description, and in the input schema each parameter's
//! name, description, title, default, enum values and examples, nested
//! ones too. A schema text's place (`inputSchema.properties.notes.
//! description`) is spelled out only when a finding names it: nearly every
//! text has none, and building every path cost more than judging the
//! short texts.

use std::fmt::Write as _;

use serde_json::Value;

/// The most strings of a schema looked at, and how deep.
const SCHEMA_TEXTS: usize = 400;
const SCHEMA_DEPTH: usize = 6;
/// The keys of a schema node read, in the order their texts are read.
const KEYS: [&str; 11] = [
    "description",
    "title",
    "default",
    "const",
    "enum",
    "examples",
    "properties",
    "items",
    "anyOf",
    "oneOf",
    "allOf",
];

/// The index in [`KEYS`] of `key`: a `match`, which tells the names
/// apart by length before comparing bytes.
fn slot(key: &str) -> Option<usize> {
    Some(match key {
        "description" => 0,
        "title" => 1,
        "default" => 2,
        "const" => 3,
        "enum" => 4,
        "examples" => 5,
        "properties" => 6,
        "items" => 7,
        "anyOf" => 8,
        "oneOf" => 9,
        "allOf" => 10,
        _ => return None,
    })
}

/// A text of a definition: where it is, and whether it is a parameter's.
pub struct Text<'a> {
    pub field: Field,
    pub text: &'a str,
    pub parameter: bool,
}

/// Where a text is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Name,
    Title,
    Description,
    /// A text of the schema node at this index of [`Texts::nodes`].
    Schema {
        node: usize,
        leaf: Leaf,
    },
}

/// Which text of a schema node.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Leaf {
    /// The node's own name: a property's.
    Itself,
    /// `description`, `title`, `default`, `const`.
    Key(&'static str),
    /// `enum[i]`, `examples[i]`.
    Item(&'static str, usize),
}

/// A node of the schema: its parent, and the step from the parent to it.
struct Node<'a> {
    parent: Option<usize>,
    step: Step<'a>,
}

enum Step<'a> {
    Root,
    Property(&'a str),
    Items,
    Branch(&'static str, usize),
}

/// A definition's texts, and the schema nodes their places refer to.
pub struct Texts<'a> {
    pub texts: Vec<Text<'a>>,
    nodes: Vec<Node<'a>>,
}

impl<'a> Texts<'a> {
    /// The texts of a definition, in the order a model reads them.
    pub fn of(name: &'a str, title: Option<&'a str>, description: Option<&'a str>, schema: &'a Value) -> Self {
        let mut texts = Vec::with_capacity(8);
        let top = [
            (Field::Name, Some(name)),
            (Field::Title, title),
            (Field::Description, description),
        ];
        for (field, text) in top {
            if let Some(text) = text {
                texts.push(Text {
                    field,
                    text,
                    parameter: false,
                });
            }
        }
        let mut all = Texts {
            texts,
            nodes: Vec::new(),
        };
        let root = all.node(None, Step::Root);
        all.walk(schema, root, 0);
        all
    }

    /// The names of the schema's properties, at any depth.
    pub fn parameters(&self) -> Vec<&'a str> {
        self.texts
            .iter()
            .filter(|t| matches!(t.field, Field::Schema { leaf: Leaf::Itself, .. }))
            .map(|t| t.text)
            .collect()
    }

    /// `field` spelled out: `description`, `inputSchema.properties.notes.description`.
    pub fn path(&self, field: Field) -> String {
        let (node, leaf) = match field {
            Field::Name => return "name".into(),
            Field::Title => return "title".into(),
            Field::Description => return "description".into(),
            Field::Schema { node, leaf } => (node, leaf),
        };
        let mut steps = Vec::new();
        let mut at = Some(node);
        while let Some(i) = at {
            steps.push(&self.nodes[i].step);
            at = self.nodes[i].parent;
        }
        let mut out = String::new();
        for step in steps.into_iter().rev() {
            let _ = match step {
                Step::Root => write!(out, "inputSchema"),
                Step::Property(name) => write!(out, ".properties.{name}"),
                Step::Items => write!(out, ".items"),
                Step::Branch(key, i) => write!(out, ".{key}[{i}]"),
            };
        }
        let _ = match leaf {
            Leaf::Itself => Ok(()),
            Leaf::Key(key) => write!(out, ".{key}"),
            Leaf::Item(key, i) => write!(out, ".{key}[{i}]"),
        };
        out
    }

    fn node(&mut self, parent: Option<usize>, step: Step<'a>) -> usize {
        self.nodes.push(Node { parent, step });
        self.nodes.len() - 1
    }

    fn push(&mut self, node: usize, leaf: Leaf, text: &'a str, parameter: bool) {
        self.texts.push(Text {
            field: Field::Schema { node, leaf },
            text,
            parameter,
        });
    }

    /// The strings of the schema node `schema` (at `node`) and of the nodes
    /// under it.
    fn walk(&mut self, schema: &'a Value, node: usize, depth: usize) {
        let Some(object) = schema.as_object() else { return };
        if depth > SCHEMA_DEPTH || self.texts.len() >= SCHEMA_TEXTS {
            return;
        }
        // One pass over the node's keys: a lookup by name hashes the name
        // (serde_json keeps keys in an IndexMap), for each of eleven names.
        let mut slots: [Option<&'a Value>; KEYS.len()] = [None; KEYS.len()];
        for (key, value) in object {
            if let Some(i) = slot(key) {
                slots[i] = Some(value);
            }
        }
        let parameter = depth > 0;
        for (&key, value) in KEYS.iter().zip(slots) {
            let Some(value) = value else { continue };
            match key {
                "description" | "title" | "default" | "const" => {
                    if let Some(text) = value.as_str() {
                        self.push(node, Leaf::Key(key), text, parameter);
                    }
                }
                "enum" | "examples" => {
                    let items = value.as_array().into_iter().flatten();
                    for (i, item) in items.enumerate() {
                        if let Some(text) = item.as_str() {
                            self.push(node, Leaf::Item(key, i), text, parameter);
                        }
                    }
                }
                "properties" => {
                    for (name, property) in value.as_object().into_iter().flatten() {
                        let at = self.node(Some(node), Step::Property(name));
                        self.push(at, Leaf::Itself, name, true);
                        self.walk(property, at, depth + 1);
                    }
                }
                "items" => {
                    let at = self.node(Some(node), Step::Items);
                    self.walk(value, at, depth + 1);
                }
                _ => {
                    for (i, branch) in value.as_array().into_iter().flatten().enumerate() {
                        let at = self.node(Some(node), Step::Branch(key, i));
                        self.walk(branch, at, depth + 1);
                    }
                }
            }
        }
    }
}
