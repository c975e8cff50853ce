"""The learner: a tiny autoregressive language model that plays Wordle offline and learns by GRPO.

Offline nothing can serve gpt-oss-20b, so the offline laboratory can put this model behind the
Job Runtime emulator instead (behind a switch; the stand-in policy in `mtrl_course.local.stand_in_policy`
stays the default). It is a real language model, only small: a character-level decoder-only
transformer in numpy (`model`), with a tokenizer and chat template that render the Strands
agent's OpenAI-format messages (`tokenizer`, `template`), a sampler (`sampler`), LoRA adapters
(`lora`), safetensors weights (`weights`) and token-level GRPO on the adapter (`grpo`).

Layering: imported by `mtrl_course.local` (the policy that serves it) and by experiments; it
imports only numpy, safetensors, the foundation and `wordle_agent`'s text constants, never the
HTTP emulator or a step module (tests/test_design.py checks this).
"""
