"""Where the session survey was imported from before it moved under the store
(`sessions.survey`, which the inbox keeps). Kept so existing importers keep
working; new code imports from `sessions.survey`."""

from __future__ import annotations

from mecha.core.sessions.survey import Planned, survey_draft, survey_session

__all__ = ["Planned", "survey_draft", "survey_session"]
