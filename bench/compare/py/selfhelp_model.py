"""The selfhelp-response contract (contracts/selfhelp-response: schema.json and the declared
rules of manifest.toml) as a Pydantic model, for the closed-loop comparison with Instructor.
The schema's if/then branches and the manifest's rules are validators, so a reply this model
accepts is one Bridle's contract accepts. With SELFHELP_RULES=0 the validators pass everything:
the model is the JSON Schema alone (its JSON Schema, what a model is shown, is the same)."""

import os
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

RULES = os.environ.get("SELFHELP_RULES", "1") != "0"

Concern = Literal["suicide", "self_harm", "harm_others", "violence", "sexual_abuse",
                  "substance_abuse", "eating_disorder", "domestic_violence", "child_safety",
                  "terrorism"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Safety(Strict):
    is_safe: bool
    danger_level: Optional[Literal["warning", "critical", "emergency"]]
    detected_concerns: list[Concern]
    requires_intervention: bool
    safety_message: Optional[str] = None

    @model_validator(mode="after")
    def rules(self):
        if not RULES:
            return self
        if len(set(self.detected_concerns)) != len(self.detected_concerns):
            raise ValueError("detected_concerns must be unique")
        high = self.danger_level in ("critical", "emergency")
        if high and self.is_safe:
            raise ValueError("a critical or emergency message is not safe")
        if high and not self.requires_intervention:
            raise ValueError("administrators are notified from critical upwards")
        if not self.is_safe and not high:
            raise ValueError("is_safe is false only for critical or emergency")
        return self


class TextBlock(Strict):
    type: Literal["text", "heading", "info", "warning", "error", "success", "code"]
    content: str = Field(min_length=1)
    style: Optional[Literal["default", "bold", "italic", "code", "quote"]] = None


class Option(Strict):
    value: str
    label: str


class FormField(Strict):
    id: str = Field(min_length=1)
    type: Literal["radio", "checkbox", "select", "text", "textarea", "number", "scale"]
    label: str
    required: Optional[bool] = None
    options: Optional[list[Option]] = None
    placeholder: Optional[str] = None
    helpText: Optional[str] = None
    min: Optional[float] = None
    max: Optional[float] = None

    @model_validator(mode="after")
    def rules(self):
        if not RULES:
            return self
        if self.type in ("radio", "checkbox", "select") and not self.options:
            raise ValueError(f"a {self.type} field needs options")
        if self.type == "scale" and (self.min is None or self.max is None):
            raise ValueError("a scale field needs min and max")
        if self.min is not None and self.max is not None and not self.min < self.max:
            raise ValueError("a field's min must be below its max")
        values = [o.value for o in self.options or []]
        if len(set(values)) != len(values):
            raise ValueError("option values must differ within a field")
        return self


class Form(Strict):
    title: Optional[str] = None
    description: Optional[str] = None
    fields: list[FormField] = Field(min_length=1)
    submit_label: Optional[str] = None

    @model_validator(mode="after")
    def rules(self):
        if not RULES:
            return self
        ids = [f.id for f in self.fields]
        if len(set(ids)) != len(ids):
            raise ValueError("each form field needs its own id")
        return self


class MediaItem(Strict):
    type: Literal["image", "video", "audio"]
    url: str = Field(min_length=1)
    alt: Optional[str] = None
    caption: Optional[str] = None


class Suggestion(Strict):
    text: str = Field(min_length=1)
    value: Optional[str] = None
    action: Optional[Literal["send_message", "navigate", "external_link"]] = None


class Content(Strict):
    text_blocks: list[TextBlock] = Field(min_length=1)
    form: Optional[Form] = None
    media: Optional[list[MediaItem]] = None
    suggestions: Optional[list[Suggestion]] = None


class Progress(Strict):
    percentage: Optional[float] = Field(default=None, ge=0, le=100)
    current_topic: Optional[str] = None
    topics_covered: Optional[list[str]] = None
    topics_remaining: Optional[list[str]] = None
    milestones_reached: Optional[list[str]] = None

    @model_validator(mode="after")
    def rules(self):
        if not RULES:
            return self
        covered, remaining = self.topics_covered, self.topics_remaining
        if covered is not None and remaining is not None and set(covered) & set(remaining):
            raise ValueError("a topic is either in topics_covered or in topics_remaining, never in both")
        if self.percentage is not None and remaining and self.percentage >= 100:
            raise ValueError("percentage is 100 only when topics_remaining is empty")
        return self


class Metadata(BaseModel):
    model: str = Field(min_length=1)
    tokens_used: Optional[int] = Field(default=None, ge=0)
    confidence: Optional[float] = Field(default=None, ge=0, le=1)
    language: Optional[str] = None


class SelfhelpResponse(Strict):
    """One assistant reply: a safety assessment of the user's last message, the content to
    display, optional progress, and metadata."""

    type: Literal["response"]
    safety: Safety
    content: Content
    progress: Optional[Progress] = None
    metadata: Metadata
