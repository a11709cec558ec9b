// claimflow results page: the claims explorer and each claim's page, from the embedded data
// (layout in src/view/model.rs). Every text from the data enters the DOM as text, never as markup.
(function () {
  "use strict";
  // When the browser reached the script: the HTML before it is read and parsed (the bench reads it).
  const started = Math.round(performance.now());
  document.documentElement.classList.add("js");
  const D = JSON.parse(document.getElementById("claimflow-data").textContent);
  const C = D.claims, A = D.arms, S = D.strings;
  const ID = 0, NODE = 1, REPO = 2, COMMIT = 3, LABEL = 4, REASON = 5, PARENT_RUNS = 6,
    CHILD_RUNS = 7, ASSERT_LINES = 8;
  // Sources, diffs and evidence: parsed when a claim's page first needs them, not at load.
  let T = null;
  const text = () => T || (T = JSON.parse(document.getElementById("claimflow-text").textContent));
  const LABELS = { f: "flipped", h: "held", d: "discarded", u: "unlabelled" };
  const VERDICTS = { f: "flipped", h: "held", n: "no verdict", ".": "not judged" };
  const PAGE = 250;
  const byId = new Map();
  C.forEach((claim, index) => byId.set(claim[ID], index));
  const armByStep = new Map();
  A.forEach((arm) => {
    armByStep.set(arm.step, arm);
    arm.byClaim = new Map();
    for (const row of arm.predictions) arm.byClaim.set(row[0], row);
  });

  function el(tag, attributes, children) {
    const node = document.createElement(tag);
    if (attributes) for (const key in attributes) {
      const value = attributes[key];
      if (value === undefined || value === null || value === false) continue;
      if (key === "text") node.textContent = value;
      else if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    if (children) for (const child of children) {
      if (child === null || child === undefined) continue;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }
  const repoName = (claim) => claim[REPO] === null ? "" : D.repositories[claim[REPO]][0];
  const splitOf = (claim) => claim[REPO] === null ? null : D.repositories[claim[REPO]][1];
  const commitOf = (claim) => claim[COMMIT] === null ? null : D.commits[claim[COMMIT]];
  const pill = (letter, names) => el("span", { class: "pill " + (letter === "." ? "u" : letter), text: names[letter] });
  const claimLink = (index) => "#claim/" + encodeURIComponent(C[index][ID]);

  // ---- routing -------------------------------------------------------------------------
  function parseHash() {
    const hash = decodeURIComponent(location.hash.slice(1) || "overview");
    if (hash.startsWith("claim/")) return { view: "claim", id: hash.slice(6) };
    const [view, query] = hash.split("?");
    const params = new URLSearchParams(query || "");
    return { view: view === "claims" ? "claims" : "overview", params };
  }
  function show(view) {
    for (const section of document.querySelectorAll("section.view")) section.hidden = section.id !== "view-" + view;
    for (const tab of document.querySelectorAll(".tabs a")) tab.classList.toggle("active", tab.dataset.tab === view);
    document.querySelector(".claim-tab").hidden = view !== "claim";
  }
  function route() {
    const where = parseHash();
    show(where.view);
    if (where.view === "claims") renderClaims(where.params);
    if (where.view === "claim") renderClaim(where.id);
    window.scrollTo(0, 0);
  }

  // ---- the claims explorer ----------------------------------------------------------------
  const FILTERS = ["split", "repo", "commit", "label", "reason", "arm", "verdict", "cell", "arm2", "q"];
  function options(values) { return values.map(([value, text]) => el("option", { value, text })); }
  function buildForm() {
    const form = document.getElementById("filters");
    const splits = [...new Set(D.repositories.map((r) => r[1]).filter((s) => s))].sort();
    const reasons = [...new Set(C.map((c) => c[REASON]).filter((r) => r >= 0))]
      .map((r) => [String(r), S[r]]).sort((a, b) => a[1].localeCompare(b[1]));
    const arms = A.map((a) => [a.step, a.step + (a.control_of ? " (control of " + a.control_of + ")" : "")]);
    const field = (label, name, control) => el("label", null, [label, control]);
    const select = (name, values) => el("select", { name }, options([["", "any"]].concat(values)));
    form.append(
      field("split", "split", select("split", splits.map((s) => [s, s]))),
      field("repository", "repo", select("repo", D.repositories.map((r) => [r[0], r[0]]))),
      field("commit (id or subject)", "commit", el("input", { name: "commit", type: "search", placeholder: "abc123…" })),
      field("label", "label", select("label", Object.entries(LABELS))),
      field("reason / discard cause", "reason", select("reason", reasons)),
      field("arm", "arm", select("arm", [["*", "any arm"]].concat(arms))),
      field("says", "verdict", select("verdict", Object.entries(VERDICTS))),
      field("cell (with arm)", "cell", select("cell", [["tp", "TP: said flipped, flipped"], ["fp", "FP: said flipped, held"],
        ["fn", "FN: said held, flipped"], ["tn", "TN: said held, held"], ["none", "no verdict, labelled"]])),
      field("disagrees with arm", "arm2", select("arm2", arms)),
      field("claim contains", "q", el("input", { name: "q", type: "search", placeholder: "test_name" })),
      el("button", { type: "button", text: "Clear", onclick: () => { location.hash = "#claims"; } })
    );
    form.addEventListener("input", () => {
      const params = new URLSearchParams();
      for (const name of FILTERS) { const value = form.elements[name].value; if (value) params.set(name, value); }
      const text = params.toString();
      history.replaceState(null, "", "#claims" + (text ? "?" + text : ""));
      renderClaims(params);
    });
  }
  function verdictOf(arm, index) { return arm.verdicts[index]; }
  function matcher(params) {
    const get = (name) => params.get(name) || "";
    const split = get("split"), repo = get("repo"), commit = get("commit").toLowerCase(), label = get("label");
    const reason = get("reason"), verdict = get("verdict"), cell = get("cell"), q = get("q").toLowerCase();
    const armName = get("arm"), arm = armByStep.get(armName), other = armByStep.get(get("arm2"));
    const cells = { tp: ["f", "f"], fp: ["f", "h"], fn: ["h", "f"], tn: ["h", "h"] };
    return (index) => {
      const claim = C[index];
      if (split && splitOf(claim) !== split) return false;
      if (repo && repoName(claim) !== repo) return false;
      if (label && claim[LABEL] !== label) return false;
      if (reason && String(claim[REASON]) !== reason) return false;
      if (q && claim[ID].toLowerCase().indexOf(q) < 0) return false;
      if (commit) {
        const c = commitOf(claim);
        if (!c || !(c[1].startsWith(commit) || (c[3] || "").toLowerCase().indexOf(commit) >= 0)) return false;
      }
      if (verdict) {
        if (armName === "*" || !arm) { if (!A.some((a) => verdictOf(a, index) === verdict)) return false; }
        else if (verdictOf(arm, index) !== verdict) return false;
      }
      if (cell && arm) {
        const v = verdictOf(arm, index), l = claim[LABEL];
        if (cell === "none") { if (v !== "n" || (l !== "f" && l !== "h")) return false; }
        else if (!cells[cell] || v !== cells[cell][0] || l !== cells[cell][1]) return false;
      }
      if (other && arm) {
        const a = verdictOf(arm, index), b = verdictOf(other, index);
        if (a === "." || b === "." || a === b) return false;
      }
      return true;
    };
  }
  let listed = [], shown = 0;
  function renderClaims(params) {
    const form = document.getElementById("filters");
    for (const name of FILTERS) if (form.elements[name] && document.activeElement !== form.elements[name]) form.elements[name].value = params.get(name) || "";
    const keep = matcher(params);
    listed = [];
    for (let index = 0; index < C.length; index++) if (keep(index)) listed.push(index);
    const counts = { f: 0, h: 0, d: 0, u: 0 };
    for (const index of listed) counts[C[index][LABEL]]++;
    document.getElementById("claims-summary").textContent = listed.length + " of " + C.length + " claims — " +
      counts.f + " flipped, " + counts.h + " held, " + counts.d + " discarded" + (counts.u ? ", " + counts.u + " unlabelled" : "");
    const table = el("table", { class: "grid", id: "claims-list" }, [el("thead", null, [el("tr", null, [
      el("th", { text: "claim" }), el("th", { text: "repository" }), el("th", { text: "commit" }),
      el("th", { text: "label" }), el("th", { text: "reason" })
    ].concat(A.map((a) => el("th", { class: "v", title: a.step + (a.control_of ? " (control of " + a.control_of + ")" : ""), text: a.step })))) ]),
    el("tbody")]);
    const holder = document.getElementById("claims-table");
    holder.replaceChildren(table);
    shown = 0;
    more();
  }
  function more() {
    const holder = document.getElementById("claims-table");
    const body = holder.querySelector("tbody");
    const end = Math.min(listed.length, shown + PAGE);
    const fragment = document.createDocumentFragment();
    for (let at = shown; at < end; at++) {
      const index = listed[at], claim = C[index], commit = commitOf(claim);
      const row = el("tr", null, [
        el("td", { class: "mono" }, [el("a", { href: claimLink(index), text: claim[NODE] || claim[ID] })]),
        el("td", { text: repoName(claim) }),
        el("td", { class: "mono", title: commit ? commit[3] || "" : "", text: commit ? commit[1].slice(0, 10) : "" }),
        el("td", null, [pill(claim[LABEL], LABELS)]),
        el("td", { text: claim[REASON] >= 0 ? S[claim[REASON]] : "" })
      ]);
      for (const arm of A) { const v = verdictOf(arm, index); row.appendChild(el("td", { class: "v v-" + v, text: v === "." ? "·" : v })); }
      fragment.appendChild(row);
    }
    body.appendChild(fragment);
    shown = end;
    const old = holder.querySelector("button.more");
    if (old) old.remove();
    if (shown < listed.length) holder.appendChild(el("button", { class: "more", type: "button", onclick: more, text: "Show " + Math.min(PAGE, listed.length - shown) + " more (" + (listed.length - shown) + " left)" }));
  }

  // ---- a claim's page ---------------------------------------------------------------------
  function codeBlock(text, classify) {
    const body = el("tbody");
    const lines = text.split("\n");
    if (lines.length && lines[lines.length - 1] === "") lines.pop();
    lines.forEach((line, number) => body.appendChild(el("tr", { class: classify(line, number) || null }, [
      el("td", { class: "ln", text: String(number + 1) }), el("td", { text: line })])));
    return el("div", { class: "code" }, [el("table", null, [body])]);
  }
  function diffClass(line) {
    if (line.startsWith("[diff truncated:")) return "cut";
    if (line.startsWith("diff --git") || line.startsWith("+++") || line.startsWith("---") || line.startsWith("index ")) return "file";
    if (line.startsWith("@@")) return "hunk";
    if (line.startsWith("+")) return "add";
    if (line.startsWith("-")) return "del";
    return "";
  }
  function runs(label, value) {
    const cells = [], details = new Map();
    if (value) [...value[0]].forEach((outcome, run) => {
      const detail = value[1] && value[1][run] >= 0 ? S[value[1][run]] : "";
      cells.push(el("span", { class: "run " + outcome, title: "run " + run + ": " + { p: "passed", f: "failed", u: "unknown" }[outcome] + (detail ? " (" + detail + ")" : ""), text: outcome.toUpperCase() }));
      if (detail) details.set(detail, (details.get(detail) || 0) + 1);
    });
    for (const [detail, count] of details) cells.push(el("span", { class: "mono", text: " " + count + " × " + detail }));
    return [el("b", { text: label }), el("div", null, cells.length ? cells : ["no runs recorded"])];
  }
  function evidenceList(evidence) {
    const rows = [];
    const value = (v) => typeof v === "string" ? v : JSON.stringify(v, null, 1);
    if (evidence === null || typeof evidence !== "object" || Array.isArray(evidence)) evidence = { evidence };
    for (const key of Object.keys(evidence)) {
      const v = evidence[key];
      if (v === null || v === undefined) continue;
      rows.push(el("dt", { text: key }));
      rows.push(key === "answer" ? el("dd", null, [el("pre", { class: "answer", text: value(v) })])
        : el("dd", { class: typeof v === "string" ? null : "mono", text: Array.isArray(v) ? v.map(value).join(", ") || "(none)" : value(v) }));
    }
    return el("dl", { class: "evidence" }, rows);
  }
  function armCard(arm, index, label) {
    const row = arm.byClaim.get(index);
    const v = verdictOf(arm, index);
    const wrong = (v === "f" || v === "h") && (label === "f" || label === "h") && v !== label;
    const head = el("div", { class: "head" }, [el("b", { text: arm.step }), pill(v, VERDICTS),
      arm.strategy ? el("span", { class: "tag", text: arm.strategy }) : null,
      arm.control ? el("span", { class: "tag", text: arm.control + " control of " + arm.control_of }) : null,
      arm.model ? el("span", { class: "tag", text: "model " + arm.model }) : null,
      wrong ? el("span", { class: "pill f", text: "disagrees with the label" }) : null]);
    const body = el("div", { class: "body" });
    if (row) {
      body.appendChild(evidenceList(text().evidence[row[1]]));
      if (row.length > 2) {
        const facts = [];
        if (row[2] !== null) facts.push("tokens in " + row[2] + ", out " + row[3]);
        if (row[4] !== null) facts.push("cost $" + Number(row[4]).toFixed(6));
        if (row[5]) facts.push("replicates 1–" + row[5].length + ": " + [...row[5]].map((r) => VERDICTS[r]).join(", "));
        body.appendChild(el("p", { class: "note", text: facts.join(" · ") }));
      }
    } else body.appendChild(el("p", { class: "note", text: "This step did not judge this claim." }));
    return el("div", { class: "arm" + (wrong ? " wrong" : "") }, [head, body]);
  }
  function renderClaim(id) {
    const page = document.getElementById("claim-page");
    const index = byId.get(id);
    if (index === undefined) { page.replaceChildren(el("div", { class: "card" }, [el("h2", { text: "No claim " + id })])); return; }
    const claim = C[index], commit = commitOf(claim);
    const head = el("div", { class: "card claim-head" }, [
      el("div", { class: "node", text: claim[NODE] || claim[ID] }),
      el("div", { class: "meta" }, [
        el("span", null, ["label ", pill(claim[LABEL], LABELS)]),
        claim[REASON] >= 0 ? el("span", null, ["reason ", el("b", { text: S[claim[REASON]] })]) : null,
        el("span", null, ["repository ", el("b", { text: repoName(claim) })]),
        splitOf(claim) ? el("span", null, ["split ", el("b", { text: splitOf(claim) })]) : null,
        el("span", { class: "mono", text: claim[ID] })]),
      el("div", { class: "meta" }, A.map((arm) => el("span", null, [arm.step + " ", pill(verdictOf(arm, index), VERDICTS)])))]);
    const cards = [head];
    const source = el("div", { class: "card" }, [el("h2", { text: "The test at the parent" })]);
    const sourceText = text().sources[index];
    if (sourceText !== null) {
      const marked = new Set(claim[ASSERT_LINES] || []);
      source.appendChild(codeBlock(sourceText, (line, number) => marked.has(number) ? "assert" : ""));
      source.appendChild(el("p", { class: "note", text: marked.size + " assertion line(s) marked" }));
    } else source.appendChild(el("p", { class: "note", text: "The report does not need the claims step: no source." }));
    const oracle = el("div", { class: "card" }, [el("h2", { text: "The oracle's runs" }),
      el("div", { class: "runs" }, runs("parent", claim[PARENT_RUNS]).concat(runs("child", claim[CHILD_RUNS])))]);
    cards.push(el("div", { class: "two" }, [source, oracle]));
    const change = el("div", { class: "card" }, [el("h2", { text: "The commit and its source-only diff" })]);
    if (commit) {
      change.appendChild(el("div", { class: "meta" }, [
        el("span", null, ["commit ", el("b", { class: "mono", text: commit[1] })]),
        el("span", null, ["parent ", el("b", { class: "mono", text: commit[2] })]),
        commit[4] !== null ? el("span", { text: new Date(commit[4] * 1000).toISOString().slice(0, 10) }) : null]));
      if (commit[3] !== null) change.appendChild(el("p", null, [el("b", { text: commit[3] })]));
      const limits = Object.keys(commit[5]);
      if (!limits.length) change.appendChild(el("p", { class: "note", text: "No diff recorded for this commit." }));
      for (const limit of limits) {
        const users = A.filter((a) => String(a.diff_limit) === limit).map((a) => a.step);
        change.appendChild(el("p", { class: "note", text: "As a model is shown it, cut at " + limit + " characters" + (users.length ? " (" + users.join(", ") + ")" : "") + "; test files left out." }));
        const diff = text().diffs[commit[5][limit]];
        change.appendChild(diff ? codeBlock(diff, diffClass) : el("p", { class: "note", text: "The diff touches no source file." }));
      }
    }
    cards.push(change);
    const arms = A.filter((a) => !a.control_of || !armByStep.has(a.control_of));
    const verdicts = el("div", { class: "card verdicts" }, [el("h2", { text: "Each arm's verdict and evidence" })]);
    for (const arm of arms) verdicts.appendChild(armCard(arm, index, claim[LABEL]));
    cards.push(verdicts);
    const controls = A.filter((a) => a.control_of && armByStep.has(a.control_of));
    if (controls.length) {
      const card = el("div", { class: "card verdicts" }, [el("h2", { text: "Controls on the same claim" })]);
      for (const arm of controls) card.appendChild(armCard(arm, index, claim[LABEL]));
      cards.push(card);
    }
    page.replaceChildren(...cards);
    document.title = (claim[NODE] || claim[ID]) + " — " + D.title;
  }

  buildForm();
  window.addEventListener("hashchange", route);
  route();
  performance.mark("claimflow-ready");
  document.body.dataset.scriptMs = String(started);
  document.body.dataset.readyMs = String(Math.round(performance.now()));
})();
