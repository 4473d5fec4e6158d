"""The log page the API answers and the CLI reads: one model for both."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class LogLine(BaseModel):
    timestamp: datetime = Field(description="when the pod wrote the line (UTC)")
    node: int = Field(description="the node index of the pod that wrote it (0 for one node)")
    message: str = Field(description="the line, without its newline")
    truncated: bool = Field(
        default=False, description="true when the line was cut at MESSAGE_CHARACTERS"
    )
    id: str = Field(description="CloudWatch's event id: the same line read twice has the same")


class LogPage(BaseModel):
    lines: list[LogLine] = Field(description="oldest first")
    limit: int
    next: str | None = Field(
        description="give it as `next` for the page after this one; null: nothing more "
        "now (a live pod may write more: ask again with `since`)"
    )
