"""The live study's pages: Jinja2 templates (autoescaped) and texts from a locale file.

Every form posts back to the participant's address with a hidden ``page`` field naming the page
it answers (the idempotency token of :mod:`simstudy.live.flow`). Values are shown as the world
presents them (:mod:`simstudy.world.presentation`: label, unit, display mapping, step, level
labels). Rating and question pages state the plan in words ("Raise savings from 720 to
2,500 EUR") and show the profile beside the suggested one, changed items highlighted (colour
and a marker, so the highlight does not depend on colour vision); each row carries its model
values as ``data-`` attributes, read by the bots as a screen reader reads the text.

Texts: ``locales/en.yaml`` holds every participant-facing string; another locale
(``study.live.locale``, e.g. ``de``, or a YAML file beside the study) overrides what it holds
and falls back to English for the rest; the study file's ``study.live.strings`` overrides any
key. Templates: the package's ``templates/``; a study's ``study.live.templates`` folder holds
templates of the same names that replace them (a ``base.html`` of its own, say).

Example:
    >>> from simstudy.live.flow import Page
    >>> from simstudy.study.live_section import LiveSpec
    >>> checks = [{"after": "profile", "prompt": "Select 'No'.", "options": ["Yes", "No"],
    ...            "correct": "No"}] * 2
    >>> pages = Pages(LiveSpec.model_validate({"attention_checks": checks}))
    >>> html = pages.render(Page("consent", "consent", {"text": "About <this> study."}), "/p/a")
    >>> "name='page' value='consent'" in html, "<script" in html, "About &lt;this&gt;" in html
    (True, False, True)
    >>> Pages(LiveSpec.model_validate({"attention_checks": checks, "locale": "de"})).t("button")
    'Weiter'
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ..core.documents import DocumentError, DocumentProblem

__all__ = ["Pages", "LOCALES", "locale_strings"]

_HERE = Path(__file__).resolve().parent
#: The shipped locales (``locales/<name>.yaml``).
LOCALES = tuple(sorted(p.stem for p in (_HERE / "locales").glob("*.yaml")))


def _flatten(tree: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in tree.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and key != "number":
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


@cache
def _read_locale(path: str) -> dict[str, Any]:
    return _flatten(yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {})


def locale_strings(locale: str = "en", base_dir: str | Path = ".") -> dict[str, Any]:
    """The texts of ``locale`` (a shipped name or a YAML file relative to ``base_dir``) over
    the English defaults, as flat dotted keys."""
    strings = dict(_read_locale(str(_HERE / "locales" / "en.yaml")))
    if locale != "en":
        path = _HERE / "locales" / f"{locale}.yaml" if locale in LOCALES else \
            Path(base_dir) / locale
        strings.update(_read_locale(str(path)))
    return strings


#: The page kinds, one template each (``templates/<kind>.html``).
KINDS = ("starting", "start", "unknown", "consent", "profile", "actionability", "check",
         "question", "rating", "end")
#: Pages with a "leave the study" form.
_LEAVABLE = ("profile", "actionability", "check", "question", "rating")


def _paragraphs(text: str | None) -> list[str]:
    return [p.strip() for p in (text or "").split("\n\n") if p.strip()]


class Pages:
    """Renders a live study's pages (see the module docstring).

    Args:
        live: the study's ``live:`` section.
        base_dir: the study file's folder (``templates`` and a locale file are relative to it).
    """

    def __init__(self, live: Any, base_dir: str | Path = ".") -> None:
        from jinja2 import ChoiceLoader, Environment, FileSystemLoader, select_autoescape

        self.live = live
        base = Path(base_dir)
        loaders = [FileSystemLoader(str(_HERE / "templates"))]
        if getattr(live, "templates", None):
            folder = base / live.templates
            if not folder.is_dir():
                raise DocumentError([DocumentProblem(str(base), "study.live.templates",
                                                     f"{folder}: no such folder")])
            loaders.insert(0, FileSystemLoader(str(folder)))
        locale = getattr(live, "locale", "en")
        if locale not in LOCALES and not (base / locale).is_file():
            raise DocumentError([DocumentProblem(str(base), "study.live.locale",
                                                 f"{locale!r} is neither a shipped locale "
                                                 f"{LOCALES} nor a file")])
        self.strings = {**locale_strings(locale, base), **(getattr(live, "strings", None)
                                                             or {})}
        number = self.strings.get("number") or {}
        self.thousands = number.get("thousands", ",")
        self.point = number.get("point", ".")
        self._feature_words: dict[tuple[str, int], tuple] = {}
        # templates are read once: a page costs no file checks (``auto_reload`` off)
        self.env = Environment(loader=ChoiceLoader(loaders),
                               autoescape=select_autoescape(default=True, default_for_string=True),
                               auto_reload=False)
        # compiled now, not on a participant's first page of each kind
        self._templates = {kind: self.env.get_template(f"{kind}.html") for kind in KINDS}

    # -- texts ------------------------------------------------------------------------------
    def t(self, key: str, default: str | None = None, **fields: Any) -> str:
        """The text of ``key`` with its ``{fields}`` filled in."""
        text = self.strings.get(key, default if default is not None else key)
        return str(text).format(**fields) if fields else str(text)

    def _words(self, field: Any) -> tuple[str, str, dict[int, str]]:
        """The label, unit and level labels of ``field`` in this study's texts (looked up
        once per feature and view: the texts do not change while the study runs)."""
        # the cached entry holds the view, so its id cannot be taken by another view
        key = (field.name, id(field.view))
        words = self._feature_words.get(key)
        if words is None:
            name, view = field.name, field.view
            words = (view, self.t(f"feature.{name}.label", view.label),
                     self.t(f"feature.{name}.unit", view.unit),
                     {c: self.t(f"feature.{name}.levels.{c}", text)
                      for c, text in view.levels.items()})
            self._feature_words[key] = words
        return words[1:]

    def label(self, field: Any) -> str:
        return self._words(field)[0]

    def unit(self, field: Any) -> str:
        return self._words(field)[1]

    def levels(self, field: Any) -> dict[int, str]:
        return dict(self._words(field)[2])

    def value(self, field: Any, v: float) -> str:
        """Model value ``v`` of ``field`` as the page shows it."""
        _, unit, levels = self._words(field)
        return field.view.text(v, self.thousands, self.point, unit, levels)

    def number(self, field: Any, v: float) -> str:
        """A display number of ``field`` (an entry's bound) with its unit."""
        text = field.view.text(field.view.model(v), self.thousands, self.point,
                               self.unit(field))
        return text

    def plan_steps(self, features: list, x: list[float], x_cf: list[float],
                   intervened: list[bool]) -> list[str]:
        """The plan in words, one step per feature it acts on."""
        out = []
        sentence = bool(self.strings.get("sentence_case", False))
        for j, f in enumerate(features):
            if not intervened[j]:
                continue
            name = self.label(f)
            if sentence:
                name = name[:1].lower() + name[1:]
            old, new = self.value(f, x[j]), self.value(f, x_cf[j])
            if f.view.coded:
                verb = "change"
            else:
                verb = "raise" if f.view.display(x_cf[j]) > f.view.display(x[j]) else "lower"
                if old == new:  # a change smaller than the step the values are shown at
                    verb += "_slightly"
            out.append(self.t(f"plan.{verb}", feature=name, old=old, new=new))
        return out

    def plan_text(self, features: list, x: list[float], x_cf: list[float],
                  intervened: list[bool]) -> str:
        """The plan in one line (the export's readable column)."""
        return "; ".join(self.plan_steps(features, x, x_cf, intervened))

    def _rows(self, features: list, x: list[float], other: list[float] | None,
              intervened: list[bool]) -> list[dict[str, Any]]:
        rows = []
        for j, f in enumerate(features):
            now = self.value(f, x[j])
            row = {"name": f.name, "label": self.label(f), "current": repr(float(x[j])),
                   "now": now, "suggested": None, "changed": False, "mark": ""}
            if other is not None:
                then = self.value(f, other[j])
                acted = bool(intervened[j])
                row.update(suggested=repr(float(other[j])), acted=int(acted), then=then,
                           changed=acted)
                if acted:
                    row["mark"] = self.t("table.changed")
                elif then != now:
                    row["mark"] = self.t("table.follows")
            rows.append(row)
        return rows

    # -- pages ------------------------------------------------------------------------------
    def render(self, page: Any, action: str) -> str:
        """The HTML of ``page``, its form posting to ``action``."""
        data = page.data
        errors = {k: self._error(v) for k, v in data.get("errors", {}).items()}
        ctx = {"lang": self.t("lang"), "title": self.t(f"title.{page.kind}"), "action": action,
               "key": page.key, "errors": errors, "t": self.t,
               # a participant taking the study may leave it (status ``returned``)
               "leave": page.kind in _LEAVABLE,
               **getattr(self, f"_{page.kind}")(data, data.get("form", {}))}
        if page.kind == "profile" and ctx.get("approved"):
            ctx["title"] = self.t("title.approved")
        template = self._templates.get(page.kind)
        if template is None:
            template = self.env.get_template(f"{page.kind}.html")
        return template.render(ctx)

    def _error(self, value: Any) -> str:
        if isinstance(value, (list, tuple)):
            key, fields = value
            return self.t(f"error.{key}", **fields)
        return str(value)

    def _unknown(self, data: dict, form: dict) -> dict:
        # why an entry link was refused (``entry.pid``, ``entry.study_id``, ``entry.limit``)
        return {"reason": self.t(f"entry.{data['reason']}") if data.get("reason") else None}

    def _start(self, data: dict, form: dict) -> dict:
        return {}

    def _starting(self, data: dict, form: dict) -> dict:
        return {}

    def _consent(self, data: dict, form: dict) -> dict:
        return {"consent": _paragraphs(data.get("text"))}

    def _profile(self, data: dict, form: dict) -> dict:
        fields = []
        for f in data["features"]:
            name = f"x_{f.name}"
            prev = str(form.get(name, ""))
            item = {"name": f.name, "id": name, "label": self.label(f), "previous": prev,
                    "error": f.name in data.get("errors", {})}
            if f.view.coded:
                item["options"] = sorted(self.levels(f).items())
                try:
                    item["entered"] = self.levels(f).get(int(prev), prev)
                except ValueError:
                    item["entered"] = prev
            else:
                item.update(unit=self.unit(f), range=self.t(
                    "profile.range", low=self.number(f, f.low), high=self.number(f, f.high)),
                    inputmode="numeric" if f.view.decimals == 0 and f.low >= 0 else "decimal",
                    entered=f"{prev} {self.unit(f)}".strip())
            fields.append(item)
        approved = data.get("errors", {}).get("profile", ("",))[0] == "approved"
        return {"fields": fields, "framing": data.get("framing", "own_profile"),
                "vignette": _paragraphs(data.get("vignette")), "approved": approved}

    def _actionability(self, data: dict, form: dict) -> dict:
        scheme, levels = data["scheme"], data["levels"]
        views = {f.name: f for f in data.get("views", [])}
        fields = []
        for name in data["features"]:
            f = views.get(name)
            fields.append({"name": name, "id": f"a_{name}", "previous": str(form.get(
                f"a_{name}", "")), "label": self.label(f) if f else name})
        return {"scheme": scheme, "ranks": list(range(1, levels + 1)), "fields": fields,
                "intro": self.t(f"actionability.{scheme}", levels=levels)}

    def _check(self, data: dict, form: dict) -> dict:
        c = data["check"]
        return {"prompt": c.prompt, "options": c.options, "previous": form.get("choice", "")}

    def _question(self, data: dict, form: dict) -> dict:
        x, features = data["x"], data.get("features") or []
        if data["kind"] == "prefer":
            left, right = (data["b"], data["a"]) if data["swapped"] else (data["a"], data["b"])
            sides = (("left", "A", left), ("right", "B", right))
        else:
            sides = (("only", "", data["a"]),)
        plans = []
        for side, name, pts in sides:
            acted = [abs(p - c) > 1e-12 for p, c in zip(pts, x, strict=True)]
            title = self.t("question.plan", name=name).strip()
            plans.append({"side": side, "title": title,
                          "steps": self.plan_steps(features, x, pts, acted),
                          "rows": self._rows(features, x, pts, acted),
                          "headers": (self.t("table.item"), self.t("table.now"),
                                      title if name else self.t("table.with_plan"))})
        prompt = self.t(f"question.{data['kind']}", number=data["q"] + 1)
        return {"q": data["q"], "kind": data["kind"], "plans": plans, "prompt": prompt}

    def _rating(self, data: dict, form: dict) -> dict:
        item, qn, features = data["item"], data["questionnaire"], data["features"]
        x, x_cf, acted = data["x"], item["x_cf"], item["intervened"]
        changeable = [{"id": f"c_{f.name}", "label": self.label(f),
                       "previous": form.get(f"c_{f.name}", "")}
                      for f, moved in zip(features, acted, strict=True) if moved]
        return {"item": item["item"],
                "intro": self.t("rating.intro", number=data["position"] + 1, of=data["of"]),
                "steps": self.plan_steps(features, x, x_cf, acted),
                "rows": self._rows(features, x, x_cf, acted),
                "headers": (self.t("table.item"), self.t("table.profile"),
                            self.t("table.with_plan")),
                "scales": [{"name": k, "text": getattr(qn, k), "previous": form.get(k, "")}
                           for k in ("accept", "act")],
                "points": list(range(1, qn.scale_points + 1)), "low": qn.low_label,
                "high": qn.high_label, "why": qn.why, "previous_why": form.get("why", ""),
                "changeable": changeable, "changeable_text": qn.changeable}

    def _end(self, data: dict, form: dict) -> dict:
        status = data["status"]
        if data["code"] is None:
            text = self.t(f"end.{status}") if status in ("timed_out", "returned") else \
                self.t("end.full")
            return {"text": text, "code": None, "debriefing": [], "status": status}
        # who rated plans learns which of them were random
        rated = status in ("completed", "failed_attention")
        return {"text": self.t(f"end.{status}"), "code": data["code"], "status": status,
                "redirect": data["redirect"],
                "debriefing": _paragraphs(data.get("debriefing")) if rated else []}
