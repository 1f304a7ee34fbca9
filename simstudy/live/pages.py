"""Server-rendered HTML of the live study's pages: plain forms, no JavaScript.

Every form posts back to the participant's address with a hidden ``page`` field naming the page
it answers (the idempotency token of :mod:`simstudy.live.flow`). Rating and question
pages show the current profile beside the suggested one, changed items highlighted (colour and
a marker, so the highlight does not depend on colour vision); each row carries its values as
``data-`` attributes, read by the bots as a screen reader reads the text.

Example:
    >>> from simstudy.live.flow import Page
    >>> html = render(Page("consent", "consent", {"text": "About this study."}), "/p/abc")
    >>> "name='page' value='consent'" in html, "<script" in html
    (True, False)
    >>> label("loan_amount"), fmt(1234.5678)
    ('Loan amount', '1235')
"""

from __future__ import annotations

from html import escape
from typing import Any

from .flow import Page

__all__ = ["render", "label", "fmt"]

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;
line-height:1.45}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #bbb;padding:.3rem .6rem}
tr.changed{background:#fff1b8;font-weight:600}.error{color:#a40000;font-weight:600}
fieldset{margin:1rem 0;border:1px solid #ccc}.scale label{margin-right:.7rem}
button{font-size:1.05rem;padding:.4rem 1.2rem}.plans{display:flex;gap:1.5rem}
"""


def label(name: str) -> str:
    """A feature name as people read it (``loan_amount`` -> ``Loan amount``)."""
    return name.replace("_", " ").capitalize()


def fmt(v: float) -> str:
    """A value as shown to people (4 significant digits)."""
    return f"{v:.4g}"


def _doc(title: str, body: str) -> str:
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width,initial-scale=1'>"
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
            f"<body><h1>{escape(title)}</h1>{body}</body></html>")


def _form(action: str, page: Page, inner: str) -> str:
    leave = "" if page.kind in ("start", "consent") else (
        f"<form method='post' action='{escape(action)}' class='leave'>"
        "<input type='hidden' name='page' value='return'>"
        "<p><button type='submit'>Leave the study</button></p></form>")
    return (f"<form method='post' action='{escape(action)}'>"
            f"<input type='hidden' name='page' value='{escape(page.key)}'>{inner}"
            f"<p><button type='submit'>Continue</button></p></form>{leave}")


def _error(page: Page, key: str) -> str:
    msg = page.data.get("errors", {}).get(key)
    return f"<p class='error' role='alert'>{escape(msg)}</p>" if msg else ""


def _previous(page: Page, key: str, default: str = "") -> str:
    return str(page.data.get("form", {}).get(key, default))


def _radio(name: str, value: str, text: str, checked: bool) -> str:
    c = " checked" if checked else ""
    return (f"<label><input type='radio' name='{escape(name)}' value='{escape(value)}'{c} "
            f"required> {escape(text)}</label> ")


def _value_text(f: Any, v: float) -> str:
    if f.labels:
        return escape(f.labels.get(int(round(v)), fmt(v)))
    return fmt(v)


def _profile_table(features: list, x: list[float], other: list[float] | None,
                   changed: list[bool], headers: tuple[str, ...]) -> str:
    rows = []
    for j, f in enumerate(features):
        cls = " class='changed'" if changed[j] else ""
        mark = " &#9670; changed" if changed[j] else ""
        cells = f"<td>{escape(label(f.name))}{mark}</td><td>{_value_text(f, x[j])}</td>"
        attrs = f" data-feature='{escape(f.name)}' data-current='{x[j]!r}'"
        if other is not None:
            cells += f"<td>{_value_text(f, other[j])}</td>"
            attrs += f" data-suggested='{other[j]!r}' data-acted='{int(changed[j])}'"
        rows.append(f"<tr{cls}{attrs}>{cells}</tr>")
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def render(page: Page, action: str) -> str:
    """The HTML of ``page``, its form posting to ``action``."""
    return globals()[f"_{page.kind}"](page, action)


def _unknown(page: Page, action: str) -> str:
    reason = page.data.get("reason")
    return _doc("Study", "<p>Please enter the study through the link of your recruitment "
                         "platform.</p>" + (f"<p class='error'>{escape(reason)}</p>"
                                            if reason else ""))


def _start(page: Page, action: str) -> str:
    return _doc("Welcome", _form(action, page, "<p>Welcome to this study. Press Continue to "
                                               "start.</p>"))



def _consent(page: Page, action: str) -> str:
    body = (f"<p>{escape(page.data.get('text', ''))}</p>{_error(page, 'consent')}"
            "<fieldset><legend>Do you agree to take part?</legend>"
            + _radio("consent", "yes", "Yes, I agree to take part", False) + "<br>"
            + _radio("consent", "no", "No, I do not agree", False) + "</fieldset>")
    return _doc("Consent", _form(action, page, body))


def _profile(page: Page, action: str) -> str:
    parts = ["<p>Please enter the applicant's profile. Each value must lie in the range "
             "shown.</p>", _error(page, "profile")]
    for f in page.data["features"]:
        name = f"x_{f.name}"
        prev = _previous(page, name)
        parts.append(f"<p><label for='{name}'>{escape(label(f.name))}</label> ")
        if f.labels:
            opts = "".join(
                f"<option value='{c}'{' selected' if prev == str(c) else ''}>"
                f"{escape(t)}</option>" for c, t in sorted(f.labels.items()))
            parts.append(f"<select id='{name}' name='{name}' required>"
                         f"<option value=''>choose</option>{opts}</select>")
        else:
            parts.append(f"<input id='{name}' name='{name}' type='text' inputmode='decimal' "
                         f"value='{escape(prev)}' required> (between {fmt(f.lower)} and "
                         f"{fmt(f.upper)})")
        parts.append(f"</p>{_error(page, f.name)}")
    return _doc("Your profile", _form(action, page, "".join(parts)))


def _actionability(page: Page, action: str) -> str:
    scheme, levels = page.data["scheme"], page.data["levels"]
    intro = {
        "binary": "For each item, can you change it?",
        "ranking": ("Rank the items you can change: 1 for the easiest, 2 for the next, ...; "
                    "choose 'cannot change' for the others."),
        "likert": (f"For each item, how hard is it for you to change it (1 = very easy, "
                   f"{levels} = very hard), or can you not change it?"),
    }[scheme]
    parts = [f"<p>{escape(intro)}</p>", _error(page, "actionability")]
    for f in page.data["features"]:
        name = f"a_{f}"
        prev = _previous(page, name)
        parts.append(f"<fieldset><legend>{escape(label(f))}</legend>")
        if scheme == "binary":
            parts.append(_radio(name, "1", "I can change it", prev == "1")
                         + _radio(name, "0", "I cannot change it", prev == "0"))
        elif scheme == "ranking":
            opts = "".join(f"<option value='{r}'{' selected' if prev == str(r) else ''}>"
                           f"rank {r}</option>" for r in range(1, levels + 1))
            sel = " selected" if prev == "0" else ""
            parts.append(f"<select name='{name}' aria-label='{escape(label(f))}' required>"
                         f"<option value=''>choose</option><option value='0'{sel}>"
                         f"cannot change</option>{opts}</select>")
        else:
            parts.append("".join(_radio(name, str(s), str(s), prev == str(s))
                                 for s in range(1, levels + 1))
                         + _radio(name, "0", "cannot change", prev == "0"))
        parts.append(f"</fieldset>{_error(page, f)}")
    return _doc("What can you change?", _form(action, page, "".join(parts)))


def _check(page: Page, action: str) -> str:
    c = page.data["check"]
    prev = _previous(page, "choice")
    body = (f"<fieldset><legend>{escape(c.prompt)}</legend>"
            + "".join(_radio("choice", o, o, prev == o) for o in c.options)
            + f"</fieldset>{_error(page, 'choice')}")
    return _doc("A short question", _form(action, page, body))


def _question(page: Page, action: str) -> str:
    q = page.data
    x = q["x"]
    features = page.data.get("features") or []
    if q["kind"] == "prefer":
        left, right = (q["b"], q["a"]) if q["swapped"] else (q["a"], q["b"])
        plans = "".join(
            f"<div data-side='{side}'><h2>Plan {name}</h2>"
            + _profile_table(features, x, pts, [abs(p - c) > 1e-12 for p, c in
                                               zip(pts, x, strict=True)],
                             ("Item", "Now", f"Plan {name}")) + "</div>"
            for side, name, pts in (("left", "A", left), ("right", "B", right)))
        body = (f"<p>Question {q['q'] + 1}: which plan would you rather follow?</p>"
                f"<div class='plans'>{plans}</div>{_error(page, 'choice')}"
                "<fieldset><legend>I prefer</legend>"
                + _radio("choice", "left", "Plan A", False)
                + _radio("choice", "right", "Plan B", False) + "</fieldset>")
    else:
        pts = q["a"]
        body = (f"<p>Question {q['q'] + 1}: is this plan satisfactory for you?</p>"
                + _profile_table(features, x, pts, [abs(p - c) > 1e-12 for p, c in
                                                    zip(pts, x, strict=True)],
                                 ("Item", "Now", "Plan")) + _error(page, "choice")
                + "<fieldset><legend>Satisfactory?</legend>"
                + _radio("choice", "yes", "Yes", False) + _radio("choice", "no", "No", False)
                + "</fieldset>")
    return _doc("Which plan?", f"<div data-question='{q['q']}' data-kind='{q['kind']}'>"
                + _form(action, page, body) + "</div>")


def _rating(page: Page, action: str) -> str:
    d = page.data
    item, qn = d["item"], d["questionnaire"]
    features = d["features"]
    parts = [f"<p>Plan {d['position'] + 1} of {d['of']}. The AI system rejected the "
             "application and suggests this plan; the highlighted items are the ones the plan "
             "asks you to change.</p>",
             _profile_table(features, d["x"], item["x_cf"], item["intervened"],
                            ("Item", "Your profile", "Suggested profile"))]
    points = qn.scale_points
    for key, text in (("accept", qn.accept), ("act", qn.act)):
        prev = _previous(page, key)
        scale = "".join(_radio(key, str(v), str(v), prev == str(v))
                        for v in range(1, points + 1))
        parts.append(f"<fieldset class='scale'><legend>{escape(text)}</legend>"
                     f"<span>{escape(qn.low_label)}</span> {scale} "
                     f"<span>{escape(qn.high_label)}</span></fieldset>{_error(page, key)}")
    parts.append(f"<p><label for='why'>{escape(qn.why)}</label><br><textarea id='why' "
                 f"name='why' rows='3' cols='60'>{escape(_previous(page, 'why'))}</textarea>"
                 "</p>")
    for j, moved in enumerate(item["intervened"]):
        if not moved:
            continue
        f = features[j].name
        prev = _previous(page, f"c_{f}")
        parts.append(f"<fieldset><legend>{escape(label(f))}: {escape(qn.changeable)}"
                     "</legend>" + _radio(f"c_{f}", "yes", "Yes", prev == "yes")
                     + _radio(f"c_{f}", "no", "No", prev == "no")
                     + f"</fieldset>{_error(page, f'c_{f}')}")
    return _doc("Your opinion of the plan",
                f"<div data-item='{item['item']}'>" + _form(action, page, "".join(parts))
                + "</div>")


def _end(page: Page, action: str) -> str:
    d = page.data
    if d["code"] is None:
        text = {"timed_out": "The time for this study has run out, so it cannot be completed "
                             "any more. Please return it on your recruitment platform.",
                "returned": "You have left the study. Please return it on your recruitment "
                            "platform."}.get(d["status"], "This study has all the participants "
                                             "it needs. Please return it on your recruitment "
                                             "platform.")
        return _doc("Thank you", f"<p id='status' data-status='{escape(d['status'])}'>"
                                 f"{escape(text)}</p>")
    text = {"completed": "Thank you for taking part.",
            "failed_attention": "Thank you. Some of the attention questions were not answered "
                                "as instructed.",
            "no_consent": "You chose not to take part. Please return the study."}[d["status"]]
    return _doc("Thank you", f"<p>{escape(text)}</p><p>Your completion code: "
                             f"<strong id='code'>{escape(d['code'])}</strong></p>"
                             f"<p><a id='redirect' href='{escape(d['redirect'])}'>Back to the "
                             "recruitment platform</a></p>")
