"""The model configuration file, as `model use` writes it."""

from __future__ import annotations

import pytest

from mecha.core.errors import InvalidInput


def test_choosing_an_agent_writes_its_api_takes_out_a_servers_keys_and_keeps_every_other_line(tmp_path):
    # Pins: the notice's one command for a newcomer with no model, which
    # must leave the person's other settings and comments as they were.
    from mecha.core.providers.config import choose_agent_model, resolve_model_config

    path = tmp_path / "sidecar.toml"
    path.write_text('# mine\n[trust]\nallow = ["Bash(bd)"]\n\n[model]\napi = "openai"\nbase_url = "http://h:1"\n'
                    'model = "m"\ntimeout_s = 30\n')
    chosen = choose_agent_model("claude-code", path)
    assert chosen.removed == {"base_url": "http://h:1", "model": "m"} and not chosen.unchanged
    text = path.read_text()
    assert text.startswith('# mine\n[trust]\nallow = ["Bash(bd)"]\n') and "base_url" not in text
    cfg = resolve_model_config(None, {}, path)
    assert cfg is not None and cfg.api == "claude-code" and cfg.timeout_s == 30
    assert choose_agent_model("claude-code", path).unchanged and path.read_text() == text
    with pytest.raises(InvalidInput, match="not an agent's command line"):
        choose_agent_model("openai", path)
    broken = tmp_path / "broken.toml"
    broken.write_text("[model\n")
    with pytest.raises(InvalidInput, match="nothing was written"):
        choose_agent_model("codex", broken)
    assert broken.read_text() == "[model\n"
