"""A small random-weight Qwen3 (or Llama) checkpoint over a real tokenizer: the vocabulary is the
tokenizer's own (e.g. Qwen3's 151,669 tokens), the rest as small as a model gets. Its text is noise
unless constrained, which is what structured-output tests want.
usage: random_hf_model.py ARCH(qwen3|llama) TOKENIZER_DIR OUT_DIR"""
import json
import os
import shutil
import struct
import sys

import numpy as np

arch, tokenizer_dir, out = sys.argv[1:4]
os.makedirs(out, exist_ok=True)
tokenizer = json.load(open(os.path.join(tokenizer_dir, "tokenizer.json")))
ids = list(tokenizer["model"]["vocab"].values()) + [t["id"] for t in tokenizer["added_tokens"]]
vocab = max(ids) + 1
tokenizer_config = json.load(open(os.path.join(tokenizer_dir, "tokenizer_config.json")))
by_content = {t["content"]: t["id"] for t in tokenizer["added_tokens"]}
by_content.update(tokenizer["model"]["vocab"])


def token_id(field):
    value = tokenizer_config.get(field)
    if isinstance(value, dict):
        value = value.get("content")
    return by_content.get(value) if value else None


hidden, layers, heads, kv_heads, ff, head_dim = 32, 1, 2, 1, 64, 16
config = {
    "architectures": ["Qwen3ForCausalLM" if arch == "qwen3" else "LlamaForCausalLM"],
    "model_type": arch, "hidden_size": hidden, "num_hidden_layers": layers,
    "num_attention_heads": heads, "num_key_value_heads": kv_heads, "intermediate_size": ff,
    "vocab_size": vocab, "max_position_embeddings": 2048, "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0, "tie_word_embeddings": True, "hidden_act": "silu",
    "torch_dtype": "float32", "head_dim": head_dim, "attention_bias": False,
    "eos_token_id": token_id("eos_token"),
}
if token_id("bos_token") is not None:
    config["bos_token_id"] = token_id("bos_token")
json.dump(config, open(os.path.join(out, "config.json"), "w"), indent=1)
for name in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(os.path.join(tokenizer_dir, name), os.path.join(out, name))

rng = np.random.default_rng(7)
r = lambda *shape, sd=0.25: (rng.standard_normal(shape) * sd).astype(np.float32)
weights = {"model.embed_tokens.weight": r(vocab, hidden, sd=1.0), "model.norm.weight": 1 + r(hidden, sd=0.1)}
for layer in range(layers):
    p = f"model.layers.{layer}."
    weights[p + "input_layernorm.weight"] = 1 + r(hidden, sd=0.1)
    weights[p + "post_attention_layernorm.weight"] = 1 + r(hidden, sd=0.1)
    weights[p + "self_attn.q_proj.weight"] = r(heads * head_dim, hidden)
    weights[p + "self_attn.k_proj.weight"] = r(kv_heads * head_dim, hidden)
    weights[p + "self_attn.v_proj.weight"] = r(kv_heads * head_dim, hidden)
    weights[p + "self_attn.o_proj.weight"] = r(hidden, heads * head_dim)
    if arch == "qwen3":
        weights[p + "self_attn.q_norm.weight"] = 1 + r(head_dim, sd=0.1)
        weights[p + "self_attn.k_norm.weight"] = 1 + r(head_dim, sd=0.1)
    weights[p + "mlp.gate_proj.weight"] = r(ff, hidden)
    weights[p + "mlp.up_proj.weight"] = r(ff, hidden)
    weights[p + "mlp.down_proj.weight"] = r(hidden, ff)
header, offset, blobs = {}, 0, []
for name in sorted(weights):
    data = np.ascontiguousarray(weights[name]).tobytes()
    header[name] = {"dtype": "F32", "shape": list(weights[name].shape),
                    "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
header["__metadata__"] = {"format": "pt"}
encoded = json.dumps(header).encode()
encoded += b" " * ((8 - len(encoded) % 8) % 8)
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(encoded)))
    f.write(encoded)
    for data in blobs:
        f.write(data)
