//! A small roff writer for the man pages: escaping, `` `code` `` in bold, and the few macros
//! the pages use (sections, paragraphs, tagged paragraphs, examples).

use crate::fail::IoContext;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// The manual's name in every page's header.
const MANUAL: &str = "PLFS Manual";

/// Escapes plain text for roff: backslashes, hyphens (`\-`: never a place to break a line) and a
/// leading control character.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\e"),
            '-' => out.push_str("\\-"),
            _ => out.push(c),
        }
    }
    if out.starts_with(['.', '\'']) {
        out.insert_str(0, "\\&");
    }
    out
}

/// Escaped text with `` `code` `` spans in bold.
pub fn inline(s: &str) -> String {
    let mut out = String::new();
    for (i, part) in s.split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str("\\fB");
            out.push_str(&escape(part));
            out.push_str("\\fR");
        } else {
            out.push_str(&escape(part));
        }
    }
    if out.starts_with(['.', '\'']) {
        out.insert_str(0, "\\&");
    }
    out
}

/// Joins the lines of a paragraph written with hard line breaks (help text) into one.
pub fn unwrap(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One man page being written.
pub struct Page {
    name: String,
    section: u8,
    out: String,
}

impl Page {
    /// A page with its header: no hyphenation, ragged right.
    pub fn new(name: &str, section: u8) -> Page {
        let out = format!(
            ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n.TH {name} {section} \"\" \"plfs {}\" \"{MANUAL}\"\n.nh\n.ad l\n",
            env!("CARGO_PKG_VERSION")
        );
        Page {
            name: name.to_string(),
            section,
            out,
        }
    }

    /// The file name: `NAME.SECTION`.
    pub fn file_name(&self) -> String {
        format!("{}.{}", self.name, self.section)
    }

    /// A section heading (upper case by convention).
    pub fn sh(&mut self, title: &str) -> &mut Page {
        self.out.push_str(&format!(".SH \"{}\"\n", title.to_uppercase()));
        self
    }

    /// A subsection heading.
    pub fn ss(&mut self, title: &str) -> &mut Page {
        self.out.push_str(&format!(".SS \"{title}\"\n"));
        self
    }

    /// A paragraph (its line breaks are not kept).
    pub fn p(&mut self, text: &str) -> &mut Page {
        self.out.push_str(".PP\n");
        self.out.push_str(&inline(&unwrap(text)));
        self.out.push('\n');
        self
    }

    /// A tagged paragraph: `tag` (in bold) on its own line, `text` indented below it.
    pub fn tp(&mut self, tag: &str, text: &str) -> &mut Page {
        self.out.push_str(&format!(".TP\n\\fB{}\\fR\n", escape(tag)));
        self.out.push_str(&inline(&unwrap(text)));
        self.out.push('\n');
        self
    }

    /// A tagged paragraph under several tags (each in bold, separated by commas).
    pub fn tp_many(&mut self, tags: &[&str], text: &str) -> &mut Page {
        let t: Vec<String> = tags.iter().map(|t| format!("\\fB{}\\fR", escape(t))).collect();
        self.out.push_str(&format!(".TP\n{}\n", t.join(", ")));
        self.out.push_str(&inline(&unwrap(text)));
        self.out.push('\n');
        self
    }

    /// Lines shown as written (examples, file layouts), indented.
    pub fn pre(&mut self, text: &str) -> &mut Page {
        self.out.push_str(".PP\n.RS 4\n.nf\n");
        for l in text.trim_matches('\n').lines() {
            let mut e = escape(l);
            if e.is_empty() {
                e = "\\&".into();
            }
            self.out.push_str(&e);
            self.out.push('\n');
        }
        self.out.push_str(".fi\n.RE\n");
        self
    }

    /// Roff written by someone else (clap_mangen's options section).
    pub fn raw(&mut self, roff: &str) -> &mut Page {
        self.out.push_str(roff);
        if !roff.ends_with('\n') {
            self.out.push('\n');
        }
        self
    }

    /// The SEE ALSO section: `pages` are `name(section)`, in that order.
    pub fn see_also(&mut self, pages: &[String]) -> &mut Page {
        self.sh("See also");
        let refs: Vec<String> = pages
            .iter()
            .map(|p| match p.split_once('(') {
                Some((n, s)) => format!("\\fB{}\\fR({s}", escape(n)),
                None => escape(p),
            })
            .collect();
        self.out.push_str(".PP\n");
        self.out.push_str(&refs.join(",\n"));
        self.out.push('\n');
        self
    }

    /// The page's section number.
    pub fn section(&self) -> u8 {
        self.section
    }

    /// Writes the page into `dir`, adding its path to `written`.
    pub fn write(&self, dir: &Path, written: &mut Vec<PathBuf>) -> Result<()> {
        let file = dir.join(self.file_name());
        std::fs::write(&file, &self.out).at("cannot write", &file)?;
        written.push(file);
        Ok(())
    }
}
