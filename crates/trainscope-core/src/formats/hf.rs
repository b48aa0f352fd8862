//! HuggingFace `config.json` → [`ModelSpec`]. Reads the keys the
//! `transformers` library writes for decoder-only models of the families
//! trainscope models: Llama / Mistral / Qwen2 / Qwen3 (and unknown model
//! types with Llama's keys), GPT-2, Mixtral, Qwen3-MoE, DeepSeek-V2/V3. The
//! family comes from
//! `model_type`, else `architectures`, else the keys present.
//!
//! Errors are located at the key in the text (file, line, column, the
//! line's text): JSON syntax errors, missing required keys (with a "did you
//! mean" when a near spelling is present), wrong types, fractions, negative
//! or absurd sizes. Every key that changes the cost of training but is not
//! modelled becomes a warning at that key (`sliding_window`,
//! `num_nextn_predict_layers`, `moe_layer_freq`, group-limited routing,
//! `quantization_config`, unusual `hidden_act`, ...), never silently
//! ignored. Approximations (see [`parse`]): Qwen2's QKV biases are left out
//! (a warning says how many elements), so are Qwen3's query/key norms;
//! DeepSeek's multi-head latent
//! attention is its projection GEMMs plus an attention core of query/key
//! width `qk_nope_head_dim + qk_rope_head_dim`; multi-token-prediction
//! layers are not counted.

use crate::diag::{Diagnostic, Location};
use crate::formats::lex;
use crate::model::{Family, MlaSpec, ModelSpec, MoeSpec};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Largest hidden size, MLP width, head size, latent rank or vocabulary
/// accepted (2^24): far above any published model, and small enough that
/// the FLOP and byte arithmetic of a model stays inside 64 bits.
pub const MAX_DIM: u64 = 1 << 24;
/// Largest layer, head or expert count accepted.
pub const MAX_COUNT: u64 = 1 << 16;
/// Largest `max_position_embeddings` accepted (2^32 tokens).
pub const MAX_POSITIONS: u64 = 1 << 32;

/// The `model_type`s read, for messages.
pub const MODEL_TYPES: &[&str] = &[
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "gpt2",
    "mixtral",
    "deepseek_v2",
    "deepseek_v3",
];

/// What a key means, for hints (missing keys and wrong values).
const KEY_MEANINGS: &[(&str, &str)] = &[
    ("hidden_size", "the model (hidden) size"),
    ("num_hidden_layers", "the number of transformer layers"),
    (
        "num_attention_heads",
        "the number of query heads of each attention layer",
    ),
    (
        "num_key_value_heads",
        "the number of key/value heads (grouped-query attention)",
    ),
    ("intermediate_size", "the width of the dense MLP"),
    ("vocab_size", "the vocabulary size"),
    (
        "max_position_embeddings",
        "the longest sequence the model's positions cover",
    ),
    ("head_dim", "the size of one attention head"),
    ("n_embd", "GPT-2's hidden size"),
    ("n_layer", "GPT-2's number of layers"),
    ("n_head", "GPT-2's number of attention heads"),
    ("n_inner", "GPT-2's MLP width (null: 4 x n_embd)"),
    ("n_positions", "GPT-2's number of learned positions"),
    ("num_local_experts", "Mixtral's experts per MoE layer"),
    ("num_experts_per_tok", "the experts each token is routed to"),
    (
        "n_routed_experts",
        "DeepSeek's routed experts per MoE layer",
    ),
    (
        "n_shared_experts",
        "DeepSeek's shared experts every token goes through",
    ),
    ("moe_intermediate_size", "the MLP width of one expert"),
    (
        "first_k_dense_replace",
        "how many leading layers keep a dense MLP",
    ),
    (
        "q_lora_rank",
        "the rank of the query down-projection (null: none)",
    ),
    (
        "kv_lora_rank",
        "the rank of the joint key/value down-projection",
    ),
    (
        "qk_nope_head_dim",
        "the per-head query/key size without rotary embedding",
    ),
    (
        "qk_rope_head_dim",
        "the per-head query/key size with rotary embedding",
    ),
    ("v_head_dim", "the per-head value size"),
];

/// How `parse` reads a file: the family and the `model_type` it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Llama / Mistral / Qwen2 or an unknown type with Llama's keys.
    Llama,
    Qwen2,
    /// Qwen3: Llama's layers with per-head query/key RMSNorms.
    Qwen3,
    /// Qwen3-MoE: Qwen3 layers whose MLP is a top-k mixture of experts.
    Qwen3Moe,
    Mistral,
    Gpt2,
    Mixtral,
    /// DeepSeek-V2 (`true`) or V3.
    Deepseek {
        v2: bool,
    },
}

/// How sure `text` is a HuggingFace `config.json` (0-100) and why; `None`
/// when nothing points to one. Given the head of a file (format detection
/// passes its first 64 KiB): a JSON
/// object whose keys name a model (`model_type` / `architectures`) and its
/// size (`hidden_size` / `n_embd` / `num_hidden_layers` / `n_layer`).
pub fn looks_like(text: &str) -> Option<(u8, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let has = |k: &str| text.contains(&format!("\"{k}\""));
    let names = ["model_type", "architectures"]
        .into_iter()
        .filter(|k| has(k))
        .count();
    let sizes = ["hidden_size", "n_embd", "num_hidden_layers", "n_layer"]
        .into_iter()
        .filter(|k| has(k))
        .count();
    match (names > 0, sizes) {
        (true, s) if s > 0 => Some((
            100,
            "a JSON object with `model_type`/`architectures` and model size keys".to_string(),
        )),
        (false, s) if s >= 2 => Some((
            70,
            "a JSON object with model size keys (`hidden_size`, `num_hidden_layers`, ...)"
                .to_string(),
        )),
        (true, _) => Some((
            45,
            "a JSON object with `model_type`/`architectures` but no size keys".to_string(),
        )),
        _ => None,
    }
}

/// Read a HuggingFace `config.json` (`text`, from the file named `file`).
/// `Ok` carries the model and its warnings (assumptions, keys that change
/// cost but are not modelled); `Err` carries at least one error (and the
/// warnings found before it), every diagnostic located at its key.
///
/// What each family reads:
/// - `llama`, `mistral`, `qwen2` (and unknown types with these keys, with a
///   warning): `hidden_size`, `num_hidden_layers`, `num_attention_heads`,
///   `num_key_value_heads` (default: the heads), `intermediate_size`,
///   `vocab_size`, `max_position_embeddings`, `tie_word_embeddings`
///   (default false), `head_dim` (default hidden / heads); RMSNorm, SwiGLU,
///   rotary positions, no biases. Qwen2's QKV biases are not counted: a
///   warning gives their number of elements.
/// - `gpt2`: `n_embd`, `n_layer`, `n_head`, `n_inner` (null: 4 x `n_embd`),
///   `n_positions` (or `n_ctx`), `vocab_size` (default 50257),
///   `tie_word_embeddings` (default true); LayerNorm, GELU MLP, biases,
///   learned positions.
/// - `qwen3`: Llama's keys (`head_dim` is usually given: Qwen3's query
///   width need not equal the hidden size); its per-head query/key
///   RMSNorms are not counted (a warning says so).
/// - `mixtral`: Llama's keys plus `num_local_experts` and
///   `num_experts_per_tok`; every layer's MLP is a mixture of experts of
///   width `intermediate_size`.
/// - `qwen3_moe`: Qwen3's keys plus `num_experts`, `num_experts_per_tok`,
///   `moe_intermediate_size` (the experts' width), `mlp_only_layers` (a
///   leading run 0..n is read as n dense layers of `intermediate_size`;
///   other entries are warned about) and `decoder_sparse_step` (any value
///   but 1 is read as 1, with a warning); no shared experts.
/// - `deepseek_v3` / `deepseek_v2`: Llama's sizes (`intermediate_size` is
///   the dense MLP of the first `first_k_dense_replace` layers) plus
///   `n_routed_experts`, `num_experts_per_tok`, `n_shared_experts`,
///   `moe_intermediate_size`, `moe_layer_freq` (any value but 1 is read as
///   1, with a warning) and the latent-attention keys `q_lora_rank` (null:
///   0), `kv_lora_rank`, `qk_nope_head_dim`, `qk_rope_head_dim`,
///   `v_head_dim`. The head size is `qk_nope_head_dim + qk_rope_head_dim`
///   and key/value heads equal the query heads.
pub fn parse(file: &str, text: &str) -> Result<(ModelSpec, Vec<Diagnostic>), Vec<Diagnostic>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Err(vec![syntax_error(file, text, &e)]),
    };
    let Value::Object(obj) = &value else {
        let at = text.len() - text.trim_start().len();
        return Err(vec![Diagnostic::error(format!(
            "a config.json is a JSON object (`{{ ... }}`), but `{file}` holds {}",
            describe(&value)
        ))
        .at(lex::location_at(file, text, at))
        .with_hint(
            "give the model's config.json as written by HuggingFace transformers: one object of `\"key\": value` pairs",
        )]);
    };
    let mut r = Reader::new(file, text, obj);
    let kind = r.kind();
    let spec = kind.and_then(|k| r.read(k));
    r.finish(spec)
}

/// The located error for a JSON syntax error of a config.json.
fn syntax_error(file: &str, text: &str, e: &serde_json::Error) -> Diagnostic {
    let hint = match e.classify() {
        serde_json::error::Category::Eof => {
            "the JSON ends before it is complete: the file may be truncated (a config.json is one `{ ... }` object)"
        }
        _ => {
            "a config.json is one JSON object of `\"key\": value` pairs separated by commas; no trailing comma, no comments, strings in double quotes"
        }
    };
    lex::json_syntax_error(file, text, e).with_hint(hint)
}

/// A JSON value in words, for messages (`"32"`, `4096.5`, `-1`, `null`,
/// `an array`).
fn describe(v: &Value) -> String {
    match v {
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
        other => lex::quote(&other.to_string(), 40),
    }
}

/// The top-level keys of the JSON object in `text` with the byte offset of
/// each occurrence's opening quote, in file order (duplicates included).
/// `text` is valid JSON whose top level is an object.
fn top_level_keys(text: &str) -> Vec<(String, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut expect_key = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                let end = i.min(b.len());
                if depth == 1 && expect_key {
                    let raw = &text[start..(end + 1).min(b.len())];
                    let key = serde_json::from_str::<String>(raw)
                        .unwrap_or_else(|_| text[start + 1..end].to_string());
                    out.push((key, start));
                    expect_key = false;
                }
            }
            b'{' => {
                depth += 1;
                if depth == 1 {
                    expect_key = true;
                }
            }
            b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => expect_key = true,
            _ => {}
        }
        i += 1;
    }
    out
}

/// Reads typed keys of the top-level object, collecting located diagnostics.
struct Reader<'a> {
    file: &'a str,
    text: &'a str,
    obj: &'a Map<String, Value>,
    /// Byte offset of each key's last occurrence (the value serde keeps).
    at: BTreeMap<String, usize>,
    diags: Vec<Diagnostic>,
}

impl<'a> Reader<'a> {
    fn new(file: &'a str, text: &'a str, obj: &'a Map<String, Value>) -> Self {
        let mut r = Reader {
            file,
            text,
            obj,
            at: BTreeMap::new(),
            diags: Vec::new(),
        };
        // Duplicated keys: the first few listed, the rest counted.
        const LISTED_DUPLICATES: usize = 8;
        let mut duplicates = 0usize;
        for (key, offset) in top_level_keys(text) {
            if r.at.insert(key.clone(), offset).is_some() {
                duplicates += 1;
                if duplicates <= LISTED_DUPLICATES {
                    let d = Diagnostic::warning(format!(
                        "`{key}` appears more than once; the last value is used"
                    ))
                    .at(lex::location_at(file, text, offset));
                    r.diags.push(d);
                }
            }
        }
        if duplicates > LISTED_DUPLICATES {
            r.diags.push(Diagnostic::warning(format!(
                "{} more repeated key(s) in `{file}` were not listed; the last value of each is used",
                duplicates - LISTED_DUPLICATES
            )));
        }
        r
    }

    /// Where `key` is written (the object's opening brace when absent).
    fn loc(&self, key: &str) -> Location {
        let at = self
            .at
            .get(key)
            .copied()
            .unwrap_or_else(|| self.text.len() - self.text.trim_start().len());
        lex::location_at(self.file, self.text, at)
    }

    fn error(&mut self, key: &str, message: String, hint: String) {
        let d = Diagnostic::error(message).at(self.loc(key)).with_hint(hint);
        self.diags.push(d);
    }

    fn warn(&mut self, key: &str, message: String) {
        let d = Diagnostic::warning(message).at(self.loc(key));
        self.diags.push(d);
    }

    /// The value of `key`, `None` when absent or null.
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.obj.get(key).filter(|v| !v.is_null())
    }

    fn meaning(key: &str) -> String {
        KEY_MEANINGS
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(String::new(), |(_, m)| format!("`{key}` is {m}; "))
    }

    /// An integer key: `None` (after an error) when it is missing and
    /// required, or not an exact integer in `min..=max`; `Some(default)`
    /// when absent or null and a default is given.
    fn int(&mut self, key: &str, default: Option<u64>, min: u64, max: u64) -> Option<u64> {
        let Some(v) = self.get(key) else {
            if let Some(d) = default {
                return Some(d);
            }
            self.missing(key);
            return None;
        };
        let what = if min == 0 {
            "a non-negative integer"
        } else {
            "a positive integer"
        };
        match v.as_u64() {
            Some(n) if n < min => {
                self.error(
                    key,
                    format!("`{key}` must be {what}, found {n}"),
                    format!("{}write a number of at least {min}", Self::meaning(key)),
                );
                None
            }
            Some(n) if n > max => {
                self.error(
                    key,
                    format!("`{key}` = {n} is larger than trainscope reads (at most {max})"),
                    format!(
                        "{}check the value: no published model comes near this limit",
                        Self::meaning(key)
                    ),
                );
                None
            }
            Some(n) => Some(n),
            None => {
                let found = describe(v);
                let hint = match v {
                    Value::String(s) if s.trim().parse::<u64>().is_ok() => {
                        format!("write the number without quotes: `\"{key}\": {}`", s.trim())
                    }
                    Value::Number(n) if n.is_i64() => {
                        format!("{}a size cannot be negative", Self::meaning(key))
                    }
                    Value::Number(_) => format!(
                        "{}sizes are whole numbers, written without a decimal point or exponent",
                        Self::meaning(key)
                    ),
                    _ => format!("{}write it as a JSON number", Self::meaning(key)),
                };
                self.error(key, format!("`{key}` must be {what}, found {found}"), hint);
                None
            }
        }
    }

    /// A required positive size of at most [`MAX_DIM`].
    fn dim(&mut self, key: &str) -> Option<u64> {
        self.int(key, None, 1, MAX_DIM)
    }

    /// A required positive count of at most [`MAX_COUNT`], as `u32`.
    fn count(&mut self, key: &str) -> Option<u32> {
        self.int(key, None, 1, MAX_COUNT)
            .and_then(|n| u32::try_from(n).ok())
    }

    fn boolean(&mut self, key: &str, default: bool) -> bool {
        match self.get(key) {
            None => default,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                let found = describe(v);
                self.error(
                    key,
                    format!("`{key}` must be true or false, found {found}"),
                    "write `true` or `false` without quotes".to_string(),
                );
                default
            }
        }
    }

    /// An error for a required key that is absent (or null), pointing at a
    /// near spelling when one is present.
    fn missing(&mut self, key: &str) {
        // Near spellings among the keys present, other than keys trainscope
        // reads for their own meaning.
        let present: Vec<&str> = self
            .at
            .keys()
            .map(String::as_str)
            .filter(|k| !KEY_MEANINGS.iter().any(|(m, _)| m == k))
            .collect();
        let near = lex::suggest_within(key, &present, 2).map(str::to_string);
        let null = self.obj.get(key).is_some_and(Value::is_null);
        let message = if null {
            format!("`{key}` is null, but the model needs it")
        } else {
            format!("missing required key `{key}`")
        };
        match near {
            Some(n) => self.error(&n, message, format!("found `{n}`: did you mean `{key}`?")),
            None => self.error(
                key,
                message,
                format!(
                    "{}add it as the model's published config.json states it",
                    Self::meaning(key)
                ),
            ),
        }
    }

    /// Warn when `key` is present and not null.
    fn warn_if_set(&mut self, key: &str, what: impl FnOnce(&Value) -> String) {
        if let Some(v) = self.get(key) {
            let m = what(v);
            self.warn(key, m);
        }
    }

    /// Decide the family: `model_type`, else `architectures`, else keys.
    fn kind(&mut self) -> Option<Kind> {
        if let Some(v) = self.get("model_type") {
            let Some(t) = v.as_str() else {
                let found = describe(v);
                self.error(
                    "model_type",
                    format!("`model_type` must be a string, found {found}"),
                    format!("one of: {}", MODEL_TYPES.join(", ")),
                );
                return None;
            };
            if let Some(k) = kind_of_type(t) {
                return Some(k);
            }
            return self.kind_from_keys(
                "model_type",
                &format!("unknown model_type `{}`", lex::quote(t, 40)),
            );
        }
        if let Some(v) = self.get("architectures") {
            let first = v.as_array().and_then(|a| a.first()).and_then(Value::as_str);
            match first {
                Some(a) => {
                    if let Some(k) = kind_of_architecture(a) {
                        return Some(k);
                    }
                    return self.kind_from_keys(
                        "architectures",
                        &format!("unknown architecture `{}`", lex::quote(a, 60)),
                    );
                }
                None => {
                    let found = describe(v);
                    self.error(
                        "architectures",
                        format!("`architectures` must be a list of class names, found {found}"),
                        "e.g. `\"architectures\": [\"LlamaForCausalLM\"]`".to_string(),
                    );
                    return None;
                }
            }
        }
        self.kind_from_keys("hidden_size", "no `model_type` or `architectures`")
    }

    /// Guess the family from the keys present (warning at `key`), or fail.
    fn kind_from_keys(&mut self, key: &str, why: &str) -> Option<Kind> {
        let has = |k: &str| self.get(k).is_some();
        let guess = if has("kv_lora_rank") && has("n_routed_experts") {
            Some((
                Kind::Deepseek { v2: false },
                "deepseek_v3",
                "`kv_lora_rank` and `n_routed_experts`",
            ))
        } else if has("num_local_experts") {
            Some((Kind::Mixtral, "mixtral", "`num_local_experts`"))
        } else if has("n_embd") {
            Some((Kind::Gpt2, "gpt2", "`n_embd`"))
        } else if has("hidden_size") && has("num_hidden_layers") {
            Some((
                Kind::Llama,
                "llama",
                "`hidden_size` and `num_hidden_layers`",
            ))
        } else {
            None
        };
        match guess {
            Some((k, name, keys)) => {
                let key = if self.at.contains_key(key) {
                    key
                } else {
                    "hidden_size"
                };
                self.warn(
                    key,
                    format!("{why}: read as {name} (it has {keys}); keys that architecture does not have are not read"),
                );
                Some(k)
            }
            None => {
                self.error(
                    key,
                    format!("{why}, and the keys do not match a model trainscope reads"),
                    format!(
                        "trainscope reads decoder-only models: model_type {} (or a config with Llama's keys `hidden_size`, `num_hidden_layers`, `num_attention_heads`, ...)",
                        MODEL_TYPES.join(", ")
                    ),
                );
                None
            }
        }
    }

    /// The name: `_name_or_path`, else the file name without `.json` (a
    /// file called `config.json` takes its folder's name, as in a
    /// downloaded hub repository `Meta-Llama-3-8B/config.json`).
    fn name(&self) -> String {
        if let Some(n) = self
            .get("_name_or_path")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|n| !n.is_empty())
        {
            return n.to_string();
        }
        let mut parts = self.file.rsplit(['/', '\\']).filter(|p| !p.is_empty());
        let base = parts.next().unwrap_or(self.file);
        let stem = base.strip_suffix(".json").unwrap_or(base);
        match parts.next() {
            Some(folder) if stem == "config" && folder != "." && folder != ".." => {
                folder.to_string()
            }
            _ => stem.to_string(),
        }
    }

    fn read(&mut self, kind: Kind) -> Option<ModelSpec> {
        match kind {
            Kind::Gpt2 => self.read_gpt2(),
            _ => self.read_llama_like(kind),
        }
    }

    fn read_gpt2(&mut self) -> Option<ModelSpec> {
        let h = self.dim("n_embd");
        let layers = self.count("n_layer");
        let heads = self.count("n_head");
        let inner = match h {
            Some(h) => self.int("n_inner", Some(4 * h), 1, MAX_DIM),
            None => None,
        };
        let positions = if self.get("n_positions").is_some() || self.get("n_ctx").is_none() {
            self.int("n_positions", None, 1, MAX_POSITIONS)
        } else {
            self.int("n_ctx", None, 1, MAX_POSITIONS)
        };
        let vocab = self.int("vocab_size", Some(50257), 1, MAX_DIM);
        let tied = self.boolean("tie_word_embeddings", true);
        if let Some(act) = self.get("activation_function").and_then(Value::as_str) {
            if !is_gelu_or_silu(act) {
                let act = act.to_string();
                self.warn(
                    "activation_function",
                    format!("`activation_function` = `{act}` is counted like GELU (an elementwise op of the same cost order)"),
                );
            }
        }
        let (h, layers, heads, inner, positions, vocab) =
            (h?, layers?, heads?, inner?, positions?, vocab?);
        let head_dim = self.head_dim_default(h, heads, "n_head")?;
        Some(ModelSpec {
            name: self.name(),
            source: format!("config.json: {}", self.file),
            family: Family::Gpt,
            hidden_size: h,
            num_layers: layers,
            num_attention_heads: heads,
            num_kv_heads: heads,
            head_dim,
            ffn_hidden_size: inner,
            gated_mlp: false,
            vocab_size: vocab,
            max_position_embeddings: positions,
            learned_positions: true,
            tied_embeddings: tied,
            linear_bias: true,
            layernorm: true,
            moe: None,
            mla: None,
        })
    }

    /// hidden / heads, or an error at `heads_key` when it does not divide.
    fn head_dim_default(&mut self, h: u64, heads: u32, heads_key: &str) -> Option<u64> {
        if h.is_multiple_of(u64::from(heads)) {
            Some(h / u64::from(heads))
        } else {
            self.error(
                heads_key,
                format!("the hidden size {h} is not a multiple of `{heads_key}` = {heads}, so the head size is unknown"),
                "state `head_dim` explicitly, or check both numbers".to_string(),
            );
            None
        }
    }

    fn read_llama_like(&mut self, kind: Kind) -> Option<ModelSpec> {
        let deepseek = matches!(kind, Kind::Deepseek { .. });
        let h = self.dim("hidden_size");
        let layers = self.count("num_hidden_layers");
        let heads = self.count("num_attention_heads");
        let kv_heads = match (deepseek, heads) {
            // MLA: every head has its own key and value.
            (true, _) => heads,
            (false, Some(a)) => self
                .int("num_key_value_heads", Some(u64::from(a)), 1, MAX_COUNT)
                .and_then(|n| u32::try_from(n).ok()),
            (false, None) => None,
        };
        let ffn = self.dim("intermediate_size");
        let vocab = self.dim("vocab_size");
        let positions = self.int("max_position_embeddings", None, 1, MAX_POSITIONS);
        let tied = self.boolean("tie_word_embeddings", false);
        let explicit_head_dim = if deepseek {
            None
        } else {
            self.get("head_dim").map(|_| self.dim("head_dim"))
        };
        self.cost_warnings(kind, layers, heads, kv_heads);
        let moe = match kind {
            Kind::Mixtral => self.mixtral_moe(ffn),
            Kind::Qwen3Moe => self.qwen3_moe(layers),
            Kind::Deepseek { .. } => self.deepseek_moe(layers),
            _ => Some(None),
        };
        let mla = if deepseek {
            self.deepseek_mla().map(Some)
        } else {
            Some(None)
        };
        let (h, layers, heads, kv_heads, ffn, vocab, positions) =
            (h?, layers?, heads?, kv_heads?, ffn?, vocab?, positions?);
        let (moe, mla) = (moe?, mla?);
        let head_dim = match (&mla, explicit_head_dim) {
            (Some(m), _) => m.qk_head_dim(),
            (None, Some(d)) => d?,
            (None, None) => self.head_dim_default(h, heads, "num_attention_heads")?,
        };
        if kv_heads > heads || !heads.is_multiple_of(kv_heads) {
            self.error(
                "num_key_value_heads",
                format!("`num_attention_heads` = {heads} is not a multiple of `num_key_value_heads` = {kv_heads}"),
                "grouped-query attention shares each key/value head among the same number of query heads".to_string(),
            );
            return None;
        }
        let family = match kind {
            Kind::Mixtral => Family::Mixtral,
            Kind::Qwen3Moe => Family::Qwen3Moe,
            Kind::Deepseek { .. } => Family::DeepseekV3,
            _ => Family::Llama,
        };
        Some(ModelSpec {
            name: self.name(),
            source: format!("config.json: {}", self.file),
            family,
            hidden_size: h,
            num_layers: layers,
            num_attention_heads: heads,
            num_kv_heads: kv_heads,
            head_dim,
            ffn_hidden_size: ffn,
            gated_mlp: true,
            vocab_size: vocab,
            max_position_embeddings: positions,
            learned_positions: false,
            tied_embeddings: tied,
            linear_bias: false,
            layernorm: false,
            moe,
            mla,
        })
    }

    /// The key that named the model's type (`model_type`, else
    /// `architectures`): where a warning about the type itself points.
    fn type_key(&self) -> &'static str {
        if self.at.contains_key("model_type") {
            "model_type"
        } else {
            "architectures"
        }
    }

    /// Warnings for keys that change cost but are not modelled.
    fn cost_warnings(
        &mut self,
        kind: Kind,
        layers: Option<u32>,
        heads: Option<u32>,
        kv_heads: Option<u32>,
    ) {
        let sliding_off = self.get("use_sliding_window") == Some(&Value::Bool(false));
        if !sliding_off {
            self.warn_if_set("sliding_window", |v| {
                format!(
                    "`sliding_window` = {} is not modelled: attention is counted as full causal attention over the whole sequence",
                    describe(v)
                )
            });
        }
        self.warn_if_set("rope_scaling", |v| {
            let kind = v
                .get("rope_type")
                .or_else(|| v.get("type"))
                .and_then(Value::as_str)
                .map_or(String::new(), |t| format!(" ({t})"));
            format!("`rope_scaling`{kind} only changes positions: no effect on cost, not modelled")
        });
        for key in ["attention_bias", "mlp_bias"] {
            if self.get(key) == Some(&Value::Bool(true)) {
                self.warn(
                    key,
                    format!("`{key}` = true: those biases are not counted (a term of the hidden size per layer, negligible next to the weights)"),
                );
            }
        }
        if let Some(act) = self.get("hidden_act").and_then(Value::as_str) {
            if !is_gelu_or_silu(act) {
                let act = act.to_string();
                self.warn(
                    "hidden_act",
                    format!("`hidden_act` = `{act}` is counted like SiLU in a gated MLP (an elementwise op of the same cost order)"),
                );
            }
        }
        if kind == Kind::Qwen2 {
            let biases = match (
                layers,
                heads,
                kv_heads,
                self.get("hidden_size"),
                self.get("head_dim"),
            ) {
                (Some(l), Some(a), Some(kv), Some(h), head_dim) => {
                    let d = head_dim
                        .and_then(Value::as_u64)
                        .or_else(|| h.as_u64().map(|h| h / u64::from(a)))
                        .unwrap_or(0);
                    Some(
                        u64::from(l)
                            .saturating_mul(u64::from(a) + 2 * u64::from(kv))
                            .saturating_mul(d),
                    )
                }
                _ => None,
            };
            let key = self.type_key();
            self.warn(
                key,
                format!(
                    "Qwen2's query/key/value projections carry biases{}; they are not counted (negligible next to the weights)",
                    biases.map_or(String::new(), |b| format!(" ({b} elements in all)"))
                ),
            );
        }
        if kind == (Kind::Deepseek { v2: true }) {
            self.warn(
                "model_type",
                "deepseek_v2 is read with the DeepSeek-V3 structure (latent attention, shared and routed experts after the first dense layers); its family shows as deepseek-v3".to_string(),
            );
        }
        if matches!(kind, Kind::Qwen3 | Kind::Qwen3Moe) {
            let key = self.type_key();
            self.warn(
                key,
                "Qwen3 normalises each query and key head (RMSNorm over the head size) before the attention core: those two norms are not counted (a pass over the queries and keys per layer, small next to the projections)".to_string(),
            );
        }
        if !matches!(kind, Kind::Deepseek { .. } | Kind::Mixtral | Kind::Qwen3Moe) {
            // MoE keys on a model read as dense.
            let moe_keys: Vec<&str> = [
                "num_experts",
                "num_local_experts",
                "n_routed_experts",
                "moe_intermediate_size",
                "num_experts_per_tok",
            ]
            .into_iter()
            .filter(|k| {
                self.get(k)
                    .is_some_and(|v| v.as_u64().is_some_and(|n| n > 0))
            })
            .collect();
            if let Some(first) = moe_keys.first() {
                let list = moe_keys
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                self.warn(
                    first,
                    format!("mixture-of-experts keys ({list}) are not read for this model type: the model is counted as dense"),
                );
            }
        }
    }

    /// Mixtral: every layer's MLP is top-k of `num_local_experts` experts.
    fn mixtral_moe(&mut self, ffn: Option<u64>) -> Option<Option<MoeSpec>> {
        let experts = self.count("num_local_experts");
        let top_k = self.count("num_experts_per_tok");
        let (experts, top_k, ffn) = (experts?, top_k?, ffn?);
        self.check_top_k(experts, top_k, "num_local_experts")?;
        Some(Some(MoeSpec {
            num_experts: experts,
            top_k,
            expert_ffn_hidden_size: ffn,
            num_shared_experts: 0,
            first_dense_layers: 0,
        }))
    }

    /// Qwen3-MoE: top-k of `num_experts` experts of width
    /// `moe_intermediate_size`; layers in `mlp_only_layers` (a leading run
    /// is read as dense layers of `intermediate_size`) and
    /// `decoder_sparse_step` (1: every layer is MoE).
    fn qwen3_moe(&mut self, layers: Option<u32>) -> Option<Option<MoeSpec>> {
        let experts = self.count("num_experts");
        let top_k = self.count("num_experts_per_tok");
        let ffn = self.dim("moe_intermediate_size");
        let step = self.int("decoder_sparse_step", Some(1), 1, MAX_COUNT);
        if let Some(k) = step.filter(|k| *k != 1) {
            self.warn(
                "decoder_sparse_step",
                format!("`decoder_sparse_step` = {k} is not modelled: every layer (but a leading run of `mlp_only_layers`) is counted as an MoE layer"),
            );
        }
        let first_dense = match self.get("mlp_only_layers") {
            None => 0,
            Some(Value::Array(a)) => {
                let ids: Vec<Option<u64>> = a.iter().map(Value::as_u64).collect();
                let leading = ids
                    .iter()
                    .enumerate()
                    .take_while(|(i, id)| **id == Some(*i as u64))
                    .count();
                if leading < ids.len() {
                    self.warn(
                        "mlp_only_layers",
                        format!("`mlp_only_layers` is read up to its leading run 0..{leading}: the other listed layers are counted as MoE layers (trainscope places dense layers first)"),
                    );
                }
                u32::try_from(leading).unwrap_or(u32::MAX)
            }
            Some(v) => {
                let found = describe(v);
                self.error(
                    "mlp_only_layers",
                    format!("`mlp_only_layers` must be a list of layer indices, found {found}"),
                    "e.g. `\"mlp_only_layers\": []` (every layer MoE) or `[0, 1]`".to_string(),
                );
                return None;
            }
        };
        let (experts, top_k, ffn) = (experts?, top_k?, ffn?);
        self.check_top_k(experts, top_k, "num_experts")?;
        if let Some(l) = layers {
            if first_dense >= l {
                self.error(
                    "mlp_only_layers",
                    format!("`mlp_only_layers` makes all {l} layers dense: no layer is a mixture of experts"),
                    "use model_type `qwen3` for a dense model".to_string(),
                );
                return None;
            }
        }
        Some(Some(MoeSpec {
            num_experts: experts,
            top_k,
            expert_ffn_hidden_size: ffn,
            num_shared_experts: 0,
            first_dense_layers: first_dense,
        }))
    }

    fn check_top_k(&mut self, experts: u32, top_k: u32, experts_key: &str) -> Option<()> {
        if top_k > experts {
            self.error(
                "num_experts_per_tok",
                format!("`num_experts_per_tok` = {top_k} is more than the {experts} experts (`{experts_key}`)"),
                "each token goes to at most every expert".to_string(),
            );
            return None;
        }
        Some(())
    }

    /// DeepSeek: routed + shared experts after the first dense layers.
    fn deepseek_moe(&mut self, layers: Option<u32>) -> Option<Option<MoeSpec>> {
        let experts = self.count("n_routed_experts");
        let top_k = self.count("num_experts_per_tok");
        let shared = self
            .int("n_shared_experts", Some(0), 0, MAX_COUNT)
            .and_then(|n| u32::try_from(n).ok());
        let ffn = self.dim("moe_intermediate_size");
        let first = self
            .int("first_k_dense_replace", Some(0), 0, MAX_COUNT)
            .and_then(|n| u32::try_from(n).ok());
        let freq = self.int("moe_layer_freq", Some(1), 1, MAX_COUNT);
        if let Some(f) = freq.filter(|f| *f != 1) {
            self.warn(
                "moe_layer_freq",
                format!("`moe_layer_freq` = {f} is not modelled: every layer after the first `first_k_dense_replace` is counted as an MoE layer"),
            );
        }
        let groups = self.get("n_group").and_then(Value::as_u64).unwrap_or(1);
        if groups > 1 {
            let topk_group = self
                .get("topk_group")
                .and_then(Value::as_u64)
                .map_or(String::new(), |g| format!(", `topk_group` = {g}"));
            let k = self
                .get("num_experts_per_tok")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            self.warn(
                "n_group",
                format!("group-limited routing (`n_group` = {groups}{topk_group}) is counted as plain top-{k} routing"),
            );
        }
        self.warn_if_set("num_nextn_predict_layers", |v| {
            format!(
                "`num_nextn_predict_layers` = {}: multi-token prediction layers are not modelled (left out of the parameter count and the FLOPs)",
                describe(v)
            )
        });
        self.warn_if_set("quantization_config", |v| {
            let method = v
                .get("quant_method")
                .and_then(Value::as_str)
                .map_or(String::new(), |m| format!(" ({m})"));
            format!("`quantization_config`{method} is ignored: the checkpoint's weight format does not set the training precision, which is a training setting")
        });
        let (experts, top_k, shared, ffn, first) = (experts?, top_k?, shared?, ffn?, first?);
        self.check_top_k(experts, top_k, "n_routed_experts")?;
        if let Some(l) = layers {
            if first > l {
                self.error(
                    "first_k_dense_replace",
                    format!("`first_k_dense_replace` = {first} is more than the {l} layers"),
                    "it counts the leading layers that keep a dense MLP".to_string(),
                );
                return None;
            }
        }
        Some(Some(MoeSpec {
            num_experts: experts,
            top_k,
            expert_ffn_hidden_size: ffn,
            num_shared_experts: shared,
            first_dense_layers: first,
        }))
    }

    /// DeepSeek's multi-head latent attention.
    fn deepseek_mla(&mut self) -> Option<MlaSpec> {
        let q_lora = self.int("q_lora_rank", Some(0), 0, MAX_DIM);
        let kv_lora = self.dim("kv_lora_rank");
        let nope = self.dim("qk_nope_head_dim");
        let rope = self.dim("qk_rope_head_dim");
        let v = self.dim("v_head_dim");
        if self.at.contains_key("kv_lora_rank") {
            self.warn(
                "kv_lora_rank",
                "multi-head latent attention is modelled as its projection GEMMs plus an attention core whose query/key head size is `qk_nope_head_dim + qk_rope_head_dim`".to_string(),
            );
        }
        Some(MlaSpec {
            q_lora_rank: q_lora?,
            kv_lora_rank: kv_lora?,
            qk_nope_head_dim: nope?,
            qk_rope_head_dim: rope?,
            v_head_dim: v?,
        })
    }

    /// The result: the model when no error was found, else the diagnostics.
    fn finish(
        mut self,
        spec: Option<ModelSpec>,
    ) -> Result<(ModelSpec, Vec<Diagnostic>), Vec<Diagnostic>> {
        if let Some(s) = &spec {
            if s.checked_parameters().is_none() {
                let d = Diagnostic::error(format!(
                    "`{}` describes more than 2^64 parameters; trainscope cannot count it",
                    self.file
                ))
                .with_hint("check the sizes: no published model comes near this");
                self.diags.push(d);
            }
        }
        // File order: by line and column (the sort is stable).
        self.diags.sort_by_key(|d| {
            d.location
                .as_ref()
                .map_or((u32::MAX, u32::MAX), |l| (l.line, l.column))
        });
        match spec {
            Some(s) if !self.diags.iter().any(Diagnostic::is_error) => Ok((s, self.diags)),
            _ => {
                if !self.diags.iter().any(Diagnostic::is_error) {
                    // Unreachable by construction (every `None` pushed an
                    // error), kept so an Err always explains itself.
                    self.diags.push(Diagnostic::error(format!(
                        "`{}` could not be read as a model",
                        self.file
                    )));
                }
                Err(self.diags)
            }
        }
    }
}

fn kind_of_type(t: &str) -> Option<Kind> {
    Some(match t {
        "llama" => Kind::Llama,
        "mistral" => Kind::Mistral,
        "qwen2" => Kind::Qwen2,
        "qwen3" => Kind::Qwen3,
        "qwen3_moe" => Kind::Qwen3Moe,
        "gpt2" => Kind::Gpt2,
        "mixtral" => Kind::Mixtral,
        "deepseek_v3" => Kind::Deepseek { v2: false },
        "deepseek_v2" => Kind::Deepseek { v2: true },
        _ => return None,
    })
}

fn kind_of_architecture(a: &str) -> Option<Kind> {
    Some(match a {
        "LlamaForCausalLM" => Kind::Llama,
        "MistralForCausalLM" => Kind::Mistral,
        "Qwen2ForCausalLM" => Kind::Qwen2,
        "Qwen3ForCausalLM" => Kind::Qwen3,
        "Qwen3MoeForCausalLM" => Kind::Qwen3Moe,
        "GPT2LMHeadModel" => Kind::Gpt2,
        "MixtralForCausalLM" => Kind::Mixtral,
        "DeepseekV3ForCausalLM" => Kind::Deepseek { v2: false },
        "DeepseekV2ForCausalLM" => Kind::Deepseek { v2: true },
        _ => return None,
    })
}

/// Activations whose cost trainscope counts as written: SiLU/Swish and the
/// GELU variants.
fn is_gelu_or_silu(act: &str) -> bool {
    matches!(
        act,
        "silu"
            | "swish"
            | "gelu"
            | "gelu_new"
            | "gelu_fast"
            | "gelu_pytorch_tanh"
            | "gelu_python"
            | "gelu_accurate"
    )
}

#[cfg(test)]
mod tests;
