"""A team labels one drafted golden set over three sittings in the real labelling page (headless
Chromium, one browser profile): a small Markdown KB and query log, ``cases draft`` with the real
model, and between the sittings a merged edit of one pooled card and the deletion of a card that
is already gold. Each sitting judges some queries (keys, or taps at 390 px), downloads and runs
the ``label apply`` command the page's "saved" hint prints. The later downloads re-send the
earlier ones and still apply (exit 0, "already applied: N"); only the edited card's judgements
go to ``stale.jsonl`` (an earlier sitting's re-sent "not relevant" too: made at content no longer
there), the deleted card's "not relevant" ones are set aside there too (``kb_sha`` null), never a
whole-file refusal; every judgement pressed is in the golden set, its sidecar or
``stale.jsonl``. A redraft into the same folder shows the unchanged pairs as judged, and a second
labeller in the same profile starts from zero."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from retrieval_gate.load.cases import load_cases
from tests.browser import browser, read_download
from tests.helpers import run_cli

pytestmark = pytest.mark.model

CARDS = {
    "refund-card": ("Refund a card payment", "Open the payment, choose Refund and confirm the amount. Card refunds "
                    "reach the customer in five to ten days."),
    "refund-transfer": ("Refund a bank transfer", "Bank transfers are refunded to the sending account. Enter the "
                        "IBAN if the original account is closed."),
    "payout-schedule": ("Payout schedule", "Payouts are sent every weekday. The first payout waits seven days "
                        "after the account is verified."),
    "payout-fees": ("Payout fees", "Each payout to a bank outside the euro area costs one euro. Instant payouts "
                    "cost one percent."),
    "invoice-reminders": ("Invoice reminders", "Turn on reminders to e-mail customers three days before and after "
                          "an invoice is due."),
    "recurring-invoices": ("Recurring invoices", "A recurring invoice is sent every month or year on the same day "
                           "until you stop it."),
    "two-factor": ("Two-factor sign-in", "Protect the account with an authenticator app code at every sign-in. "
                   "Lost phone: use a recovery code."),
    "delete-account": ("Delete the account", "Deleting the account removes every invoice and customer after "
                       "thirty days. It cannot be undone."),
    "export-data": ("Export your data", "Download invoices, customers and payments as CSV files from Settings, "
                    "Export."),
    "change-plan": ("Change the plan", "Upgrade or downgrade the subscription plan at any time; the price "
                    "difference is prorated."),
    "team-members": ("Invite team members", "Invite colleagues by e-mail and give each a role: owner, "
                     "accountant or viewer."),
    "api-keys": ("API keys", "Create an API key in Settings, Developers. Keep it secret and rotate it if it "
                 "leaks."),
}
LOG = [("how do I refund a card payment", 5), ("refund money sent by bank transfer", 3),
       ("when are payouts sent to my bank", 4), ("what does an instant payout cost", 2),
       ("remind customers about unpaid invoices", 3), ("send the same invoice every month", 2),
       ("set up two factor authentication", 4), ("I lost my phone and cannot sign in", 2),
       ("close and delete my account", 3), ("download all my invoices as csv", 2),
       ("upgrade my subscription plan", 3), ("add my accountant as a user", 2)]





def _case(page) -> str:
    return page.js("document.getElementById('case-id').textContent")


def _classes(page) -> dict[str, str]:
    return dict(page.js("Array.from(document.querySelectorAll('#cands li')).map(li => [li.dataset.card, "
                        "li.className.trim()])"))


def _progress(page) -> str:
    return page.js("document.getElementById('progress').textContent")


def _kept(page) -> str:
    """What this browser profile keeps for the page (for a failure's message): the stores and the
    page's own warning, if any."""
    return page.js("JSON.stringify({stores: Object.keys(localStorage).map(k => [k, localStorage.getItem(k).length]), "
                   "saved: document.getElementById('saved').textContent})")


def _order(page) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The queries in the page's order, and each one's cards with the hash the page shows them at."""
    data = page.js("JSON.parse(document.getElementById('draft-data').textContent)")
    cards = [c[0] for c in data["cards"]]
    return [q["id"] for q in data["queries"]], {q["id"]: {cards[i]: sha for i, sha in q["c"]} for q in data["queries"]}


Pressed = dict[tuple[str, str | None], int | None]  # (case, card) → grade; (case, None) → None: no answer


def _judge(page, case: str, pool: dict[str, str], relevant: str | None, *, tap: bool) -> Pressed:
    """Judge the query shown: ``relevant`` (focused by a tap or the arrows, then 1), the rest not
    relevant (r); None: no answer (n). What was pressed, for the assertions."""
    assert _case(page) == case
    done = int(_progress(page).split()[0])
    cards = list(pool)

    def act(key: str) -> None:
        if tap:
            page.tap_element(f"#actions button[data-key='{key}']")
        else:
            page.press(key)

    if relevant is None:
        act("n")
        out: Pressed = {(case, None): None}
    else:
        if tap:
            page.tap_element("#cands li", cards.index(relevant))
        else:
            for _ in range(cards.index(relevant)):
                page.press("ArrowDown")
        assert "focus" in _classes(page)[relevant]
        act("1")
        if _case(page) == case:
            act("r")
        out = {(case, c): int(c == relevant) for c in cards}
    assert _case(page) != case and int(_progress(page).split()[0]) == done + 1
    return out


def _download(page, folder: Path, *, tap: bool = False) -> tuple[list[dict], str]:
    """The labels file the browser saves, and the command the "saved" hint prints."""
    folder.mkdir()
    page.allow_downloads(folder)
    if tap:
        page.tap_element("#download-labels")
    else:
        page.press("d")
    return read_download(page, folder), page.js("document.querySelector('#saved code').textContent")


def _apply_as_hinted(hint: str, labels: Path, capsys) -> tuple[int, str, str]:
    """The hint's command, run from the repository root with the path the browser saved to."""
    args = shlex.split(hint)
    assert args[:4] == ["retrieval-gate", "label", "apply", "labels.jsonl"], hint
    return run_cli(["label", "apply", str(labels), *args[4:]], capsys)


def _keyed(labels: list[dict]) -> set[tuple]:
    return {tuple(sorted(r.items())) for r in labels}


def _stale(root: Path) -> set[tuple[str, str, str, str | None]]:
    path = root / "draft" / "stale.jsonl"
    return {(s["case_id"], s["card_id"], s["judged_sha"], s["kb_sha"]) for s in map(json.loads,
                                                                                    path.read_text().splitlines())}


def _card_sha(root: Path, card: str) -> str:
    from retrieval_gate.load.kb import load_kb
    from retrieval_gate.score.kb_manifest import kb_manifest

    return kb_manifest(load_kb(root / "kb").cards)[card].sha


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    kb = tmp_path / "kb"
    kb.mkdir()
    for card, (title, body) in CARDS.items():
        (kb / f"{card}.md").write_text(f"# {title}\n\n{body}\n")
    (tmp_path / "queries.txt").write_text("".join(f"{q}\n" * n for q, n in LOG))
    return tmp_path


def test_three_sittings_with_a_kb_edit_and_a_gold_card_deleted_lose_no_judgement(repo: Path, capsys):
    draft = ["cases", "draft", "--queries", "queries.txt", "--out", "draft", "--kb", "kb", "--size", "12",
             "--depth", "3"]
    code, _, err = run_cli(draft, capsys)
    assert code == 0, err
    pressed: Pressed = {}
    with browser() as page:
        page.open(repo / "draft" / "label.html")
        order, pools = _order(page)
        assert len(order) == 12
        one, two, three = order[0:3], order[3:6], order[6:10]  # two queries stay unlabelled
        # the card to delete: judged relevant in the first sitting, pooled again in the third
        later = {card for case in three for card in pools[case]}
        gold_case, gone = next((case, card) for case in one for card in pools[case] if card in later)
        # the card to edit: pooled in the second sitting's queries, not the one to delete
        edited = next(card for case in two for card in pools[case] if card != gone)
        sha = {(case, card): s for case, cards in pools.items() for card, s in cards.items()}

        # sitting 1: keys, on a desktop — the gold card, a no-answer query, the first card
        plan = {gold_case: gone, next(c for c in one if c != gold_case): None}
        for case in one:
            pressed |= _judge(page, case, pools[case], plan.get(case, next(iter(pools[case]))), tap=False)
        kept_one = _kept(page)
        assert "did not keep" not in kept_one and "retrieval-gate-label:v2" in kept_one, kept_one  # kept, no warning
        first, hint = _download(page, repo / "s1")
        assert hint == "retrieval-gate label apply labels.jsonl --draft draft/draft.jsonl --cases cases.jsonl --kb kb"
        code, out, err = _apply_as_hinted(hint, repo / "s1" / "labels.jsonl", capsys)
        assert code == 0, err
        assert "already applied: 0" in out and "set aside as stale: 0" in out
        assert {c.id: c.gold for c in load_cases(repo / "cases.jsonl").cases}[gold_case] == (gone,)

        # merged between the sittings: one pooled card edited
        path = repo / "kb" / f"{edited}.md"
        path.write_text(path.read_text() + "\nSince the last release this works from the mobile app too.\n")
        new_sha = _card_sha(repo, edited)

        # sitting 2: the same page and profile at 390 px, taps alone; the edited card judged relevant once
        page.open(repo / "draft" / "label.html", width=390, height=844, mobile=True)
        assert _progress(page).startswith(f"3 of 12 queries done · {len(first)} judgements"), _kept(page)
        edited_case = next(case for case in two if edited in pools[case])
        for case in two:
            other = [c for c in pools[case] if c != edited]
            pressed |= _judge(page, case, pools[case], edited if case == edited_case else other[min(1, len(other) - 1)],
                              tap=True)
        second, hint = _download(page, repo / "s2", tap=True)
        assert _keyed(second) > _keyed(first)  # it re-sends the first sitting
        code, out, err = _apply_as_hinted(hint, repo / "s2" / "labels.jsonl", capsys)
        assert code == 0, err
        # stale, counted by hand from the download: every judgement of the edited card in it, all made at its
        # old content — this sitting's and the first's re-sent ones (a "not relevant" of a card edited since is
        # stale like any other judgement, docs/golden-set.md); already applied: the first sitting's others
        edited_two = {(r["case"], r["card"]) for r in second if r.get("card") == edited}
        assert edited_two >= {(case, edited) for case in two if edited in pools[case]}
        already_two = sum(r.get("card") != edited for r in first)
        assert f"already applied: {already_two}," in out and f"set aside as stale: {len(edited_two)}" in out
        assert "1 of them wait on a card set aside as stale" in out  # the query whose relevant card changed
        assert _stale(repo) == {(case, card, sha[(case, card)], new_sha) for case, card in edited_two}

        # merged between the sittings: the gold card deleted
        (repo / "kb" / f"{gone}.md").unlink()

        # sitting 3: keys again; the deleted card still shows in this page and is judged not relevant
        page.open(repo / "draft" / "label.html")
        assert _case(page) == three[0]
        for case in three:
            pressed |= _judge(page, case, pools[case], next(c for c in pools[case] if c not in (gone, edited)),
                              tap=False)
        third, hint = _download(page, repo / "s3")
        assert _keyed(third) > _keyed(second)
        code, out, err = _apply_as_hinted(hint, repo / "s3" / "labels.jsonl", capsys)
        assert code == 0, err
        # stale, by hand from the download: every judgement of the edited card (all at its old content), and every
        # "not relevant" of the deleted card, the earlier sittings' re-sent ones too (their sidecar entries judge a
        # card no longer there); its relevant judgement is the case's gold, which carries no hash: already applied
        edited_three = {(r["case"], r["card"]) for r in third if r.get("card") == edited}
        gone_not = {(r["case"], r["card"]) for r in third if r.get("card") == gone and r["grade"] == 0}
        gone_three = {(case, gone) for case in three if gone in pools[case]}
        assert gone_three and gone_not >= gone_three and edited_three >= edited_two
        stale_three = edited_three | gone_not
        assert f"already applied: {sum((r['case'], r.get('card')) not in stale_three for r in second)}," in out
        assert f"set aside as stale: {len(stale_three)}" in out
        assert f"card {gone!r} of {next(iter(sorted(gone_three)))[0]} changed since it was judged" in out
        assert _stale(repo) == ({(c, k, sha[(c, k)], new_sha) for c, k in edited_three}
                                | {(c, k, sha[(c, k)], None) for c, k in gone_not})

        # no judgement lost: each one pressed is in the golden set, its sidecar or stale.jsonl, once
        cases = load_cases(repo / "cases.jsonl").cases
        held = [(c.id, card) for c in cases for card in c.gold] + [(c.id, None) for c in cases if not c.gold]
        # the sidecar's entries that still judge: a stale one (edited or deleted card) stays in the file but judges
        # nothing, its judgement is the one in stale.jsonl
        side = [(o["case"], o["card"]) for o in map(json.loads, (repo / "cases.not-relevant.jsonl")
                                                     .read_text().splitlines()) if o["card"] not in (edited, gone)]
        stale = [(case, card) for case, card, _, _ in _stale(repo)]
        assert sorted(held + side + stale, key=str) == sorted(pressed, key=str)
        assert all(pressed[pair] == 1 for pair in held if pair[1] is not None)
        assert all(pressed[pair] == 0 for pair in side)
        assert next(c for c in cases if c.id == gold_case).gold == (gone,)  # kept: the deleted card is a loss to score

        # a redraft into the same folder, after the edit and the deletion: the unchanged pairs show as judged
        code, _, err = run_cli(draft, capsys)
        assert code == 0, err
        page.open(repo / "draft" / "label.html")
        order2, pools2 = _order(page)
        assert all(gone not in cards for cards in pools2.values())
        kept = {(case, card): grade for (case, card), grade in pressed.items()
                if card is not None and pools2.get(case, {}).get(card) == sha[(case, card)]}
        assert kept and all(card != edited for _, card in kept)
        shown = _case(page)  # the first query not done
        for card, cls in _classes(page).items():
            judged = kept.get((shown, card))
            assert ("rel" in cls) == (judged == 1) and ("not" in cls) == (judged == 0), (shown, card, cls)
        redrafted, hint = _download(page, repo / "redraft")
        assert {(r["case"], r["card"]): r["grade"] for r in redrafted if "card" in r} == kept
        code, out, err = _apply_as_hinted(hint, repo / "redraft" / "labels.jsonl", capsys)
        assert code == 0, err
        assert f"already applied: {len(redrafted)}," in out and "wrote" not in out
        assert "(1 of them wait on a card set aside as stale)" in out  # stale.jsonl still holds its judgement

        # the edited card judged again in the new page, at its content now: its query becomes a case
        for _ in range(len(order2)):
            if _case(page) == edited_case:
                break
            page.press("s")
        assert _case(page) == edited_case and _classes(page)[edited] == "focus"  # asked again, the first not judged
        page.press("1")
        if _case(page) == edited_case:
            page.press("r")
        again, hint = _download(page, repo / "again")
        assert {(r["card"], r["grade"], r["sha"]) for r in again if r["case"] == edited_case and "card" in r} >= {
            (edited, 1, new_sha)}
        code, out, err = _apply_as_hinted(hint, repo / "again" / "labels.jsonl", capsys)
        assert code == 0, err
        assert next(c for c in load_cases(repo / "cases.jsonl").cases if c.id == edited_case).gold == (edited,)
        assert (edited_case, edited) not in {(c, k) for c, k, _, _ in _stale(repo)}  # no longer waiting
        assert len(_stale(repo)) == len(stale_three) - 1

        # a second labeller's page of the same draft, in the same profile: nothing judged yet
        code, _, err = run_cli([*draft[:5], "bob", *draft[6:], "--labeller", "bob"], capsys)
        assert code == 0, err
        page.open(repo / "bob" / "label.html")
        assert _progress(page).startswith("0 of 12 queries done · 0 judgements")
        assert _case(page) == order2[0]
        assert not any("rel" in k or "not" in k for k in _classes(page).values())
        assert page.script_errors() == []
