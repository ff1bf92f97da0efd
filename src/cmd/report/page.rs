//! The page around the sections: one HTML file with its CSS and script inline and every
//! picture inline (SVG, or PNG as a data URL), so that it opens anywhere with no network.
//! Every string that comes from an input goes through [`esc`].

use std::fmt::Write;

/// A section of the page: its id (also its anchor) and its HTML.
pub struct Section {
    /// The element id, e.g. `machine`.
    pub id: &'static str,
    /// Its heading.
    pub title: String,
    /// Its body.
    pub body: String,
}

/// `s` escaped for HTML text and attribute values.
pub fn esc(s: &str) -> String {
    crate::cmd::heatmap::xml(s)
}

/// The whole page: a title, the inputs read, a table of contents and the sections.
pub fn page(title: &str, inputs: &[(String, &str)], sections: &[Section]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width\">\n<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<header>\n<h1>{}</h1>\n<ul class=\"inputs\">\n",
        esc(title),
        esc(title)
    );
    for (path, kind) in inputs {
        let _ = writeln!(s, "<li><code>{}</code> ({})</li>", esc(path), esc(kind));
    }
    s += "</ul>\n<nav>";
    for sec in sections {
        let _ = write!(s, "<a href=\"#{}\">{}</a> ", sec.id, esc(&sec.title));
    }
    s += "</nav>\n</header>\n<main>\n";
    for sec in sections {
        let _ = write!(
            s,
            "<section id=\"{}\" class=\"report-section\">\n<h2>{}</h2>\n{}\n</section>\n",
            sec.id,
            esc(&sec.title),
            sec.body
        );
    }
    let _ = write!(
        s,
        "</main>\n<footer>Written by tdmap report {}. Measured figures come from the run report; SIMULATED ones from tdmap-sim's model.</footer>\n<script>{JS}</script>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
    s
}

/// A PNG as a data URL, for an `<img>` that needs no other file.
pub fn png_data_url(png: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(22 + png.len() * 4 / 3 + 4);
    out += "data:image/png;base64,";
    for chunk in png.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A table with a header row; cells are HTML already (escape them first).
pub fn table(class: &str, head: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("<table class=\"{class}\"><thead><tr>");
    for h in head {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s += "</tr></thead><tbody>\n";
    for r in rows {
        s += "<tr>";
        for c in r {
            let _ = write!(s, "<td>{c}</td>");
        }
        s += "</tr>\n";
    }
    s + "</tbody></table>"
}

const CSS: &str = r#"
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
header, main, footer { max-width: 1200px; margin: 0 auto; padding: 8px 20px; }
h1 { font-size: 22px; margin: 8px 0; word-break: break-all; }
h2 { font-size: 18px; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
nav a { margin-right: 12px; }
.inputs { margin: 4px 0; padding-left: 20px; color: #555; }
section { background: white; border: 1px solid #ddd; border-radius: 4px; padding: 4px 16px 16px; margin: 16px 0; overflow-x: auto; }
.note { color: #666; }
.simulated { color: #b00; font-weight: bold; letter-spacing: 1px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 2px 8px; text-align: right; }
th { background: #f0f0f0; }
.box { border: 2px solid #888; border-radius: 4px; padding: 4px; margin: 4px; display: inline-flex; flex-direction: column; vertical-align: top; }
.box > .label { font-size: 12px; color: #444; margin-bottom: 2px; }
.box > .kids { display: flex; flex-wrap: wrap; }
.machine { border-color: #333; background: #f7f7f7; }
.host { border-color: #555; }
.package { border-color: #c33; background: #fff8f8; }
.numa { border-color: #36c; background: #f5f8ff; }
.core { border: 1px solid #aaa; border-radius: 3px; margin: 2px; padding: 2px; display: inline-flex; gap: 2px; background: #fff; }
.pu { width: 58px; min-height: 34px; border: 1px solid #ccc; font-size: 11px; padding: 1px 2px; background: #fff; }
.pu.busy { background: #fff4c0; border-color: #c90; }
.thread { display: inline-block; background: #36c; color: white; border-radius: 3px; padding: 0 3px; margin: 1px; font-size: 11px; cursor: default; }
.thread.hot { background: #c33; }
.chart { background: white; }
img.chart { max-width: 100%; }
footer { color: #777; font-size: 12px; }
"#;

/// Hovering a thread marks it everywhere on the page; the last line says the script ran
/// to its end (the Chromium test reads it).
const JS: &str = r#"
(function () {
  "use strict";
  var marks = document.querySelectorAll("[data-thread]");
  function mark(t, on) {
    marks.forEach(function (m) {
      if (m.getAttribute("data-thread") === t) { m.classList.toggle("hot", on); }
    });
  }
  marks.forEach(function (m) {
    var t = m.getAttribute("data-thread");
    m.addEventListener("mouseenter", function () { mark(t, true); });
    m.addEventListener("mouseleave", function () { mark(t, false); });
  });
  var n = document.querySelectorAll("section.report-section").length;
  document.body.setAttribute("data-sections", String(n));
  document.body.setAttribute("data-ready", "yes");
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_padding() {
        assert_eq!(png_data_url(b"Man"), "data:image/png;base64,TWFu");
        assert_eq!(png_data_url(b"Ma"), "data:image/png;base64,TWE=");
        assert_eq!(png_data_url(b"M"), "data:image/png;base64,TQ==");
    }

    #[test]
    fn input_text_cannot_open_a_tag_or_script() {
        let sec = Section {
            id: "x",
            title: "<script>alert(1)</script>".into(),
            body: String::new(),
        };
        let p = page("a\"<b>", &[("<img src=x>".into(), "trace")], &[sec]);
        assert!(!p.contains("<script>alert"), "{p}");
        assert!(!p.contains("<img src=x>"));
        assert!(p.contains("a&quot;&lt;b&gt;"));
        assert_eq!(p.matches("<script>").count(), 1, "only the page's own");
    }
}
