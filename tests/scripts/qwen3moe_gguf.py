"""Convert a HF Qwen3-MoE checkpoint (config.json, model.safetensors, tokenizer.json) to a GGUF
'qwen3moe' file in llama.cpp's layout, with ../shared/tools/gguf_io.py as the writer: tern's
loader is tested against a file that tern's own writer did not produce.

  /usr/bin/python3 tests/scripts/qwen3moe_gguf.py HF_DIR OUT.gguf [SHARED_TOOLS_DIR]

SHARED_TOOLS_DIR holds gguf_io.py and make_gguf.py, whose writer and tokenizer metadata are used
as they are; it defaults to HF_DIR/../../tools (HF_DIR being ../shared/models/NAME). Weights are
written as f32, Q and K unpermuted (Qwen keeps HF's rotate-half layout in GGUF, unlike llama).
"""
import json
import os
import sys


def qwen3moe_kv(c, name, n_vocab, gguf_io):
    a = "qwen3moe."
    u32, f32 = gguf_io.T_U32, gguf_io.T_F32
    head_dim = c.get("head_dim", c["hidden_size"] // c["num_attention_heads"])
    return [
        ("general.architecture", gguf_io.T_STR, "qwen3moe"), ("general.name", gguf_io.T_STR, name),
        ("general.file_type", u32, 0),  # all f32
        (a + "vocab_size", u32, n_vocab),
        (a + "context_length", u32, c["max_position_embeddings"]),
        (a + "embedding_length", u32, c["hidden_size"]),
        (a + "block_count", u32, c["num_hidden_layers"]),
        (a + "feed_forward_length", u32, c["intermediate_size"]),
        (a + "attention.head_count", u32, c["num_attention_heads"]),
        (a + "attention.head_count_kv", u32, c["num_key_value_heads"]),
        (a + "attention.key_length", u32, head_dim),
        (a + "attention.value_length", u32, head_dim),
        (a + "rope.freq_base", f32, c.get("rope_theta", 1000000.0)),
        (a + "attention.layer_norm_rms_epsilon", f32, c["rms_norm_eps"]),
        (a + "expert_count", u32, c["num_experts"]),
        (a + "expert_used_count", u32, c["num_experts_per_tok"]),
        (a + "expert_feed_forward_length", u32, c["moe_intermediate_size"]),
    ]


def is_sparse_layer(c, layer):
    """As HF's Qwen3MoeDecoderLayer decides: dense MLP for mlp_only_layers and off-step layers."""
    step = c.get("decoder_sparse_step", 1)
    return layer not in c.get("mlp_only_layers", []) and c["num_experts"] > 0 and (layer + 1) % step == 0


def qwen3moe_tensors(c, w, np, F32):
    stack = lambda names: np.stack([w[n] for n in names])  # experts outermost
    T = [("token_embd.weight", w["model.embed_tokens.weight"], F32)]
    for l in range(c["num_hidden_layers"]):
        p, q = f"model.layers.{l}.", f"blk.{l}."
        s = p + "self_attn."
        T += [(q + "attn_norm.weight", w[p + "input_layernorm.weight"], F32),
              (q + "attn_q.weight", w[s + "q_proj.weight"], F32),
              (q + "attn_k.weight", w[s + "k_proj.weight"], F32),
              (q + "attn_v.weight", w[s + "v_proj.weight"], F32),
              (q + "attn_output.weight", w[s + "o_proj.weight"], F32),
              (q + "attn_q_norm.weight", w[s + "q_norm.weight"], F32),
              (q + "attn_k_norm.weight", w[s + "k_norm.weight"], F32),
              (q + "ffn_norm.weight", w[p + "post_attention_layernorm.weight"], F32)]
        if is_sparse_layer(c, l):
            E = range(c["num_experts"])
            T += [(q + "ffn_gate_inp.weight", w[p + "mlp.gate.weight"], F32),  # [n_expert][hidden]
                  (q + "ffn_gate_exps.weight", stack([p + f"mlp.experts.{e}.gate_proj.weight" for e in E]), F32),
                  (q + "ffn_up_exps.weight", stack([p + f"mlp.experts.{e}.up_proj.weight" for e in E]), F32),
                  (q + "ffn_down_exps.weight", stack([p + f"mlp.experts.{e}.down_proj.weight" for e in E]), F32)]
        else:
            T += [(q + "ffn_gate.weight", w[p + "mlp.gate_proj.weight"], F32),
                  (q + "ffn_up.weight", w[p + "mlp.up_proj.weight"], F32),
                  (q + "ffn_down.weight", w[p + "mlp.down_proj.weight"], F32)]
    T += [("output_norm.weight", w["model.norm.weight"], F32)]
    if "lm_head.weight" in w:
        T += [("output.weight", w["lm_head.weight"], F32)]
    return T


def main(argv):
    if len(argv) not in (3, 4):
        sys.stderr.write(__doc__)
        return 2
    hf_dir, out = argv[1], argv[2]
    tools_dir = argv[3] if len(argv) == 4 else os.path.join(hf_dir, os.pardir, os.pardir, "tools")
    sys.path.insert(0, os.path.abspath(tools_dir))
    import numpy as np
    import gguf_io
    import make_gguf

    c = json.load(open(os.path.join(hf_dir, "config.json")))
    if c.get("model_type") != "qwen3_moe":
        sys.stderr.write(f"{hf_dir}/config.json: model_type is {c.get('model_type')!r}, expected 'qwen3_moe'\n")
        return 2
    w = gguf_io.read_safetensors(os.path.join(hf_dir, "model.safetensors"))
    n_vocab, tokenizer = make_gguf.tokenizer_kv(hf_dir, c)
    name = os.path.basename(os.path.normpath(hf_dir))
    gguf_io.write_gguf(out, qwen3moe_kv(c, name, n_vocab, gguf_io) + tokenizer,
                       qwen3moe_tensors(c, w, np, gguf_io.GGML_F32))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
