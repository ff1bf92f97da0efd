//! The JSON schemas of docs/schemas/ hold for real outputs: `tdmap analyze --json` and
//! `tdmap sim --json` of the committed trace, `tdmap comm --assemble` of rows written as
//! libtdmap_mpi writes them, and `tdmap trace --model-only` of a traced program. Every
//! field an output has must be in its schema (`additionalProperties: false`), so a field
//! added without documenting it fails here. The validator is the subset of JSON Schema
//! the files use: `$ref` to a sibling file, `const`, `type`, `required`, `properties`,
//! `additionalProperties: false` and `items`.

mod common;

use common::{cargo_build, tdmap, test_path};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn schemas() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/schemas")
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "string" => v.is_string(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        other => panic!("schema type {other} unknown to this validator"),
    }
}

/// The first place where `v` breaks `schema`, as `path: why`.
fn check(schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return check(&load(&schemas().join(r)), v, at);
    }
    if let Some(c) = schema.get("const") {
        if c != v {
            return Err(format!("{at}: {v} is not {c}"));
        }
    }
    if let Some(t) = schema.get("type") {
        let ok = match t {
            Value::String(t) => type_matches(t, v),
            Value::Array(ts) => ts.iter().any(|t| type_matches(t.as_str().unwrap(), v)),
            _ => panic!("{at}: bad type in schema"),
        };
        if !ok {
            return Err(format!("{at}: {v:.60} is not of type {t}"));
        }
    }
    if let (Some(props), Some(obj)) = (schema.get("properties"), v.as_object()) {
        for req in schema["required"].as_array().into_iter().flatten() {
            let req = req.as_str().unwrap();
            if !obj.contains_key(req) {
                return Err(format!("{at}: required field {req} is missing"));
            }
        }
        for (k, x) in obj {
            match props.get(k) {
                Some(s) => check(s, x, &format!("{at}.{k}"))?,
                None if schema["additionalProperties"] == Value::Bool(false) => {
                    return Err(format!("{at}: field {k} is not in the schema"))
                }
                None => {}
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            check(items, x, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

/// Checks `output` against `name`'s schema, and that the check can fail: the output
/// without its first required field, or with an undocumented one, is refused.
fn holds(name: &str, output: &Value) {
    let schema = load(&schemas().join(format!("{name}.schema.json")));
    if let Err(e) = check(&schema, output, name) {
        panic!("{name}: real output breaks docs/schemas/{name}.schema.json: {e}");
    }
    let mut extra = output.clone();
    extra["undocumented"] = Value::Bool(true);
    assert!(
        check(&schema, &extra, name).is_err(),
        "{name}: extra field accepted"
    );
    let first = schema["required"][2]
        .as_str()
        .expect("a third required field");
    let mut missing = output.clone();
    missing.as_object_mut().unwrap().remove(first);
    assert!(
        check(&schema, &missing, name).is_err(),
        "{name}: missing {first} accepted"
    );
}

fn json_stdout(args: &[&str]) -> Value {
    let out = tdmap(args);
    assert!(
        out.status.success(),
        "tdmap {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn trace() -> String {
    test_path("fixtures/traces/pairs-8t.trace")
        .display()
        .to_string()
}

#[test]
fn analyze_report_matches_its_schema() {
    holds(
        "tdmap-analyze",
        &json_stdout(&["analyze", &trace(), "--json"]),
    );
}

#[test]
fn sim_report_matches_its_schema() {
    let sim = json_stdout(&["sim", &trace(), "--machine", "xeon-x7550-4s", "--json"]);
    holds("tdmap-sim", &sim);
}

#[test]
fn communication_matrix_matches_its_schema() {
    let dir = scratch("schema-comm");
    let rows = dir.join("rows");
    std::fs::create_dir_all(&rows).unwrap();
    for (rank, dst) in [(0, 1), (1, 0)] {
        let row = format!(
            "tdmap-mpi-row 1\nrun schema-1\nmpi openmpi\nrank {rank}\nsize 2\ncalls 6\nlib_ns 22621\np2p {dst} 3232 4\ncoll {dst} 800 2\nfinalize_ns 117628\nend\n"
        );
        std::fs::write(rows.join(format!("rank-{rank}.row")), row).unwrap();
    }
    let out = dir.join("comm.json");
    let run = tdmap(&[
        "comm",
        "--assemble",
        rows.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    holds("tdmap-comm", &load(&out));
}

#[test]
fn model_matches_its_schema() {
    cargo_build("tdmap-rt");
    let dir = scratch("schema-model");
    let src = dir.join("mt.c");
    std::fs::write(
        &src,
        "#include <pthread.h>\nint a[4096];\n\
         void *w(void *p) { long t = (long)p; for (int r = 0; r < 10; r++) for (int i = 0; i < 4096; i++) a[i] += t; return 0; }\n\
         int main(void) { pthread_t th[2]; for (long t = 0; t < 2; t++) pthread_create(&th[t], 0, w, (void *)t);\n\
         for (int t = 0; t < 2; t++) pthread_join(th[t], 0); return 0; }\n",
    )
    .unwrap();
    let exe = dir.join("mt");
    let (exe_s, src_s) = (exe.to_str().unwrap(), src.to_str().unwrap());
    let built = tdmap(&["gcc", "-O1", "-pthread", "-o", exe_s, src_s]);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let model = dir.join("model.json");
    let model_s = model.to_str().unwrap();
    let run = tdmap(&["trace", "--model-only", "-o", model_s, "--", exe_s]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    holds("tdmap-model", &load(&model));
}
