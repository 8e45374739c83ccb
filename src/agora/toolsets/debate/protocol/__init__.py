"""The debate/v1 protocol rules: the micro-state (`state`) and the post gates (`gates`).

Pure rules over plain values; the topic entity applies them (`commands.protocol`), the read
paths ask `state.hidden_ids` what the blind barrier hides. No I/O, no trio, no SQL.
"""
