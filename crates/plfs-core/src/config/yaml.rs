//! The plfsrc's YAML: saphyr-parser (a YAML 1.2 parser that gives each event its position) turns
//! the text into events, and this module builds them into a small tree whose every node knows
//! its line, so that a message about any key or value can name the line it is on.
//!
//! Plain scalars are resolved by the rules plfsrc files have been read with so far (those of
//! serde_yaml 0.9, the parser used before): the empty value, `~` and `null` (`Null`, `NULL`) are
//! null; `true` and `false` (`True`, `TRUE`...) are booleans, while `yes`, `no`, `on` and `off`
//! are strings (the loader accepts them where it wants a boolean); integers are decimal (no
//! leading zero, no `_`) or `0x`, `0o`, `0b` with an optional sign; floats are what Rust parses
//! if finite, plus `.inf` and `.nan`; anything else is a string. Quoted and block scalars are
//! strings. A local tag (`!name`) makes a tagged node; the core tags `!!bool`, `!!int`, `!!float`
//! and `!!null` check their scalar and other global tags are ignored. Anchors and aliases and
//! `<<` merge keys work; a key given twice in one mapping is an error.

use saphyr_parser::{Event, Marker, Parser, ScalarStyle, ScanError, Tag};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// Deepest nesting of lists and mappings, counting what aliases bring in.
const MAX_DEPTH: usize = 128;

/// Prefix of the core schema's tags (`!!int` is `tag:yaml.org,2002:int`).
const CORE: &str = "tag:yaml.org,2002:";

/// A node of the tree and where it starts.
pub(super) struct Node {
    /// 1-based line.
    pub(super) line: usize,
    /// 1-based column (in characters).
    col: usize,
    /// Lists and mappings from this node down, counting what aliases bring in (0 for a scalar).
    depth: usize,
    pub(super) value: Value,
}

/// What a node holds. An alias is the node it names (shared, never copied).
pub(super) enum Value {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    String(String),
    Sequence(Vec<Rc<Node>>),
    /// Key and value pairs in file order, merged pairs (`<<`) last.
    Mapping(Vec<(Rc<Node>, Rc<Node>)>),
    /// A node with a local tag, and the tag as shown in messages (`!name`).
    Tagged(String, Rc<Node>),
}

impl Node {
    /// The string a node holds, if it holds one, tagged or not (as with serde_yaml, the loader
    /// reads `!path /a` wherever it reads a string).
    pub(super) fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) => Some(s),
            Value::Tagged(_, inner) => inner.as_str(),
            _ => None,
        }
    }
}

/// A short description of a node for messages.
pub(super) fn describe(n: &Node) -> String {
    match &n.value {
        Value::Null => "nothing (an empty value)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => float_text(*f),
        Value::String(s) => format!("{s:?}"),
        Value::Sequence(_) => "a list".into(),
        Value::Mapping(_) => "a mapping".into(),
        Value::Tagged(t, _) => format!("a value tagged {t}"),
    }
}

/// Invalid YAML: the message and where (1-based line and column, in characters).
#[derive(Debug)]
pub(super) struct YamlError {
    pub(super) line: usize,
    pub(super) col: usize,
    pub(super) msg: String,
}

fn error_at(m: Marker, msg: impl Into<String>) -> YamlError {
    YamlError {
        line: m.line(),
        col: m.col() + 1,
        msg: msg.into(),
    }
}

/// Reads YAML text: the root node of its document, or None if it holds no document.
pub(super) fn parse(text: &str) -> Result<Option<Rc<Node>>, YamlError> {
    let mut b = Builder::default();
    let mut parser = Parser::new_from_str(text);
    let mut cursor = Cursor {
        text,
        chars: 0,
        bytes: 0,
    };
    let mut documents = 0;
    let mut previous_end = Marker::new(0, 1, 0);
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| scan_error(text, &e))?;
        let at = match event {
            Event::Scalar(_, ScalarStyle::Literal | ScalarStyle::Folded, 0, None) => {
                cursor.block_start(previous_end, span.start)
            }
            _ => span.start,
        };
        if !matches!(event, Event::DocumentStart(false)) {
            // (An implicit document start has the span of what follows it.)
            previous_end = span.end;
        }
        match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(error_at(
                        at,
                        "more than one document (a plfsrc is one YAML document; another starts here)",
                    ));
                }
            }
            Event::Alias(id) => {
                let node = b.anchors.get(&id).cloned().ok_or_else(|| {
                    error_at(
                        at,
                        "this alias names a node that contains it (a node cannot contain itself)",
                    )
                })?;
                b.add(node, at)?;
            }
            Event::Scalar(v, style, anchor, tag) => {
                let node = scalar(v, style, tag, at)?;
                b.done(node, anchor, at)?;
            }
            Event::SequenceStart(anchor, tag) => b.open(at, anchor, tag, Items::Sequence(Vec::new()))?,
            Event::MappingStart(anchor, tag) => {
                let items = Items::Mapping {
                    pairs: Vec::new(),
                    keys: HashMap::new(),
                    waiting: None,
                };
                b.open(at, anchor, tag, items)?
            }
            Event::SequenceEnd | Event::MappingEnd => b.close(at)?,
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
        }
    }
    Ok(b.root)
}

/// A walk through the text by character index (saphyr-parser's markers count characters), forward
/// only.
struct Cursor<'a> {
    text: &'a str,
    /// A character index and its byte offset.
    chars: usize,
    bytes: usize,
}

impl Cursor<'_> {
    /// Where a block scalar starts: at its `|` or `>`, the first one after the event before it
    /// (outside comments). saphyr-parser's span of a block scalar starts at its content, on a later
    /// line, or for an empty one, at whatever follows it.
    fn block_start(&mut self, after: Marker, content: Marker) -> Marker {
        for c in self.text[self.bytes..].chars() {
            if self.chars >= after.index() {
                break;
            }
            self.chars += 1;
            self.bytes += c.len_utf8();
        }
        let (mut line, mut col, mut comment, mut previous) = (after.line(), after.col(), false, ' ');
        let rest = self.text[self.bytes..]
            .chars()
            .take(content.index().saturating_sub(self.chars));
        for (i, c) in rest.enumerate() {
            match c {
                '\n' => (line, col, comment) = (line + 1, 0, false),
                '#' if previous.is_whitespace() => comment = true,
                '|' | '>' if !comment => return Marker::new(self.chars + i, line, col),
                _ => {}
            }
            if c != '\n' {
                col += 1;
            }
            previous = c;
        }
        content
    }
}

/// A scanner's error. Tabs in indentation are the commonest mistake and the parser does not
/// always say so where they are: it reports a tab-indented line that continues a plain scalar
/// where that scalar starts (the message then names the tab's line instead), and may stumble on
/// other tab-indented lines later or on the line before (the message then names them).
fn scan_error(text: &str, e: &ScanError) -> YamlError {
    let info = match e.info() {
        // A line of a block mapping without its `:` (at the end of the text, or not).
        "simple key expect ':'" | "simple key expected" => "could not find expected ':' after a key",
        info => info,
    };
    let mut err = error_at(*e.marker(), info);
    let last = text.split('\n').count();
    if err.line > last {
        // The end of a text without a final newline is on its last line.
        let end = text.rsplit('\n').next().unwrap_or_default();
        (err.line, err.col) = (last, end.chars().count() + 1);
    }
    let tab_at = |(n, l): (usize, &str)| {
        let indent = l.len() - l.trim_start_matches([' ', '\t']).len();
        l[..indent]
            .find('\t')
            .filter(|_| indent < l.len())
            .map(|col| (n + 1, col + 1))
    };
    let mut tabs = text.lines().enumerate().filter_map(tab_at);
    if info.split(' ').any(|w| w == "tab" || w == "tabs") {
        if let Some(at) = tabs.find(|&(line, _)| line >= err.line) {
            (err.line, err.col) = at;
        }
        err.msg.push_str(" (tabs cannot be used for indentation in YAML)");
    } else if let Some((line, _)) = tabs.next().filter(|&(line, _)| line <= err.line + 1) {
        let hint = format!(" (line {line} is indented with a tab, and tabs cannot be used for indentation in YAML)");
        err.msg.push_str(&hint);
    }
    err
}

/// A list or mapping being read.
struct Open {
    start: Marker,
    anchor: usize,
    tag: Option<String>,
    items: Items,
}

enum Items {
    Sequence(Vec<Rc<Node>>),
    Mapping {
        pairs: Vec<(Rc<Node>, Rc<Node>)>,
        /// The line of each key so far, by [`key_id`].
        keys: HashMap<String, usize>,
        /// A key waiting for its value.
        waiting: Option<Rc<Node>>,
    },
}

/// Builds the tree from the parser's events.
#[derive(Default)]
struct Builder {
    /// The lists and mappings being read, outermost first.
    stack: Vec<Open>,
    /// Finished anchored nodes by anchor id (an alias names one of these).
    anchors: HashMap<usize, Rc<Node>>,
    root: Option<Rc<Node>>,
}

fn too_deep(at: Marker) -> YamlError {
    error_at(
        at,
        format!("recursion limit exceeded (more than {MAX_DEPTH} nested lists and mappings)"),
    )
}

impl Builder {
    fn open(&mut self, at: Marker, anchor: usize, tag: Option<Cow<Tag>>, items: Items) -> Result<(), YamlError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(too_deep(at));
        }
        self.stack.push(Open {
            start: at,
            anchor,
            tag: tag.map(|t| full_tag(&t)),
            items,
        });
        Ok(())
    }

    fn close(&mut self, at: Marker) -> Result<(), YamlError> {
        let Some(open) = self.stack.pop() else {
            return Err(error_at(at, "the end of a list or mapping that was never started"));
        };
        let (value, depth) = match open.items {
            Items::Sequence(items) => {
                let depth = items.iter().map(|n| n.depth).max().unwrap_or(0);
                (Value::Sequence(items), depth)
            }
            Items::Mapping { mut pairs, .. } => {
                merge(&mut pairs)?;
                let depth = pairs.iter().map(|(k, v)| k.depth.max(v.depth)).max().unwrap_or(0);
                (Value::Mapping(pairs), depth)
            }
        };
        let node = with_tag(open.tag, open.start, depth + 1, value);
        self.done(node, open.anchor, open.start)
    }

    /// A node is complete: remember it under its anchor and add it to its parent.
    fn done(&mut self, node: Rc<Node>, anchor: usize, at: Marker) -> Result<(), YamlError> {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        self.add(node, at)
    }

    fn add(&mut self, node: Rc<Node>, at: Marker) -> Result<(), YamlError> {
        if self.stack.len() + node.depth > MAX_DEPTH {
            return Err(too_deep(at));
        }
        let Some(parent) = self.stack.last_mut() else {
            self.root = Some(node);
            return Ok(());
        };
        match &mut parent.items {
            Items::Sequence(items) => items.push(node),
            Items::Mapping { pairs, keys, waiting } => match waiting.take() {
                Some(key) => pairs.push((key, node)),
                None => {
                    if let Some(first) = keys.insert(key_id(&node), node.line) {
                        let shown = if matches!(node.value, Value::Null) {
                            "null".into()
                        } else {
                            describe(&node)
                        };
                        return Err(error_at(
                            parent.start,
                            format!(
                                "duplicate key {shown} in the mapping that starts on this line (on line {first} and \
                                 again on line {})",
                                node.line
                            ),
                        ));
                    }
                    *waiting = Some(node);
                }
            },
        }
        Ok(())
    }
}

/// What makes two keys the same key: their value (and a tagged key's tag), or for a list or a
/// mapping, being the same node (an alias of it). Lists and mappings are never plfsrc keys: the
/// loader refuses them wherever it reads keys.
fn key_id(n: &Rc<Node>) -> String {
    match &n.value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("bool {b}"),
        Value::Int(i) => format!("int {i}"),
        Value::Float(f) if f.is_nan() => "float nan".into(),
        Value::Float(f) => format!("float {}", (f + 0.0).to_bits()),
        Value::String(s) => format!("string {s}"),
        Value::Tagged(t, inner) => format!("{t} {}", key_id(inner)),
        Value::Sequence(_) | Value::Mapping(_) => format!("node {:p}", Rc::as_ptr(n)),
    }
}

/// Applies a `<<` merge key: the pairs of the mapping it names (or of each mapping of the list it
/// names) are added after the mapping's own, but not over a key the mapping has already (and an
/// earlier mapping of the list wins over a later one). As in serde_yaml, the last pair takes the
/// place of the `<<` pair.
fn merge(pairs: &mut Vec<(Rc<Node>, Rc<Node>)>) -> Result<(), YamlError> {
    let Some(i) = pairs
        .iter()
        .position(|(k, _)| matches!(&k.value, Value::String(s) if s == "<<"))
    else {
        return Ok(());
    };
    let (_, from) = pairs.swap_remove(i);
    let sources: Vec<&Rc<Node>> = match &from.value {
        Value::Mapping(_) => vec![&from],
        Value::Sequence(list) => list.iter().collect(),
        _ => {
            return Err(node_error(
                &from,
                format!(
                    "<<: expected a mapping or a list of mappings to merge, found {}",
                    describe(&from)
                ),
            ))
        }
    };
    let mut ids: HashSet<String> = pairs.iter().map(|(k, _)| key_id(k)).collect();
    for source in sources {
        let Value::Mapping(more) = &source.value else {
            return Err(node_error(
                source,
                format!("<<: expected a mapping to merge, found {}", describe(source)),
            ));
        };
        for (k, v) in more {
            if ids.insert(key_id(k)) {
                pairs.push((k.clone(), v.clone()));
            }
        }
    }
    Ok(())
}

fn node_error(n: &Node, msg: String) -> YamlError {
    YamlError {
        line: n.line,
        col: n.col,
        msg,
    }
}

/// A tag as written in full (`!name`, `tag:yaml.org,2002:int`, or what a `%TAG` handle stands for).
fn full_tag(t: &Tag) -> String {
    format!("{}{}", t.handle, t.suffix)
}

/// A node with its tag: a local tag (`!name`) wraps the node, other tags are dropped.
fn with_tag(tag: Option<String>, at: Marker, depth: usize, value: Value) -> Rc<Node> {
    let node = Rc::new(Node {
        line: at.line(),
        col: at.col() + 1,
        depth,
        value,
    });
    match tag {
        Some(t) if t.starts_with('!') => {
            // Shown as serde_yaml showed it: `!name`, whether written `!name` or `!<!name>`.
            let name = match &t[1..] {
                "" => "!",
                rest => rest,
            };
            let name = name.strip_prefix('!').filter(|r| !r.is_empty()).unwrap_or(name);
            Rc::new(Node {
                line: node.line,
                col: node.col,
                depth,
                value: Value::Tagged(format!("!{name}"), node),
            })
        }
        _ => node,
    }
}

fn scalar(v: Cow<str>, style: ScalarStyle, tag: Option<Cow<Tag>>, at: Marker) -> Result<Rc<Node>, YamlError> {
    let tag = tag.map(|t| full_tag(&t));
    let plain = style == ScalarStyle::Plain;
    let local = tag.as_deref().is_none_or(|t| t.starts_with('!'));
    let value = match tag.as_deref().and_then(|t| t.strip_prefix(CORE)) {
        Some("bool") => parse_bool(&v).map(Value::Bool).ok_or("a boolean"),
        Some("int") => int(&v).map(Value::Int).ok_or("an integer"),
        Some("float") => float(&v).map(Value::Float).ok_or("a float"),
        Some("null") => is_null(&v).then_some(Value::Null).ok_or("null"),
        _ if local && plain => Ok(resolve(&v)),
        _ => Ok(Value::String(v.to_string())),
    };
    let value = value.map_err(|want| {
        let t = tag.as_deref().unwrap_or_default().replace(CORE, "!!");
        error_at(at, format!("{v:?} is not {want} (it is tagged {t})"))
    })?;
    Ok(with_tag(tag, at, 0, value))
}

/// A plain scalar's value.
fn resolve(v: &str) -> Value {
    if v.is_empty() || is_null(v) {
        Value::Null
    } else if let Some(b) = parse_bool(v) {
        Value::Bool(b)
    } else if let Some(i) = int(v) {
        Value::Int(i)
    } else if let Some(f) = float(v).filter(|_| !leading_zero(v)) {
        Value::Float(f)
    } else {
        Value::String(v.to_owned())
    }
}

fn is_null(v: &str) -> bool {
    matches!(v, "~" | "null" | "Null" | "NULL")
}

fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

/// Digits with a leading zero (`012`, `-00`): a string, neither an integer nor a float.
fn leading_zero(v: &str) -> bool {
    let v = v.strip_prefix(['-', '+']).unwrap_or(v);
    v.len() > 1 && v.starts_with('0') && v[1..].bytes().all(|b| b.is_ascii_digit())
}

/// An integer: one optional sign, then decimal digits or `0x`, `0o`, `0b` and digits.
fn int(v: &str) -> Option<i128> {
    let (negative, unsigned) = match v.as_bytes().first() {
        Some(b'-') => (true, &v[1..]),
        Some(b'+') => (false, &v[1..]),
        _ => (false, v),
    };
    let (radix, digits) = match unsigned.get(..2) {
        Some("0x") => (16, &unsigned[2..]),
        Some("0o") => (8, &unsigned[2..]),
        Some("0b") => (2, &unsigned[2..]),
        _ => (10, unsigned),
    };
    if digits.starts_with(['+', '-']) || (radix == 10 && leading_zero(v)) {
        return None;
    }
    let n = i128::from_str_radix(digits, radix).ok()?;
    Some(if negative { -n } else { n })
}

/// A finite float as Rust parses it (one optional `+`), or `.inf`, `-.inf`, `.nan`.
fn float(v: &str) -> Option<f64> {
    let unsigned = match v.strip_prefix('+') {
        Some(r) if r.starts_with(['+', '-']) => return None,
        Some(r) => r,
        None => v,
    };
    match (unsigned, v) {
        (".inf" | ".Inf" | ".INF", _) => Some(f64::INFINITY),
        (_, "-.inf" | "-.Inf" | "-.INF") => Some(f64::NEG_INFINITY),
        (_, ".nan" | ".NaN" | ".NAN") => Some(f64::NAN),
        _ => unsigned.parse::<f64>().ok().filter(|f| f.is_finite()),
    }
}

/// A float in the shortest form that reads back the same, as messages have always shown it:
/// `1.5`, `1000000000.0`, `0.0001`, then `1e16`, `1.5e-7` beyond 16 digits left of the point
/// or 5 zeros right of it.
fn float_text(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f < 0.0 { "-.inf" } else { ".inf" }.into();
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits = mantissa.replace('.', "");
    let len = digits.len() as i64;
    // The point goes after `point` digits (before the first when 0, further left when negative).
    let point = exp.parse::<i64>().unwrap_or(0) + 1;
    let zeros = |n: i64| "0".repeat(n.max(0) as usize);
    let body = if len <= point && point <= 16 {
        format!("{digits}{}.0", zeros(point - len))
    } else if 0 < point && point <= 16 {
        format!("{}.{}", &digits[..point as usize], &digits[point as usize..])
    } else if -5 < point && point <= 0 {
        format!("0.{}{digits}", zeros(-point))
    } else if len == 1 {
        format!("{digits}e{}", point - 1)
    } else {
        format!("{}.{}e{}", &digits[..1], &digits[1..], point - 1)
    };
    format!("{sign}{body}")
}
