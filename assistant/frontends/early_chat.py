"""The chat the starting page shows once the knowledge base is loaded, before gradio's page is ready.

Why: on a warm start the index loads in about a second and gradio's page takes three more; the chat's API
answers from that first second (``web_early.py``), and this page puts it in the browser: a box, a button,
the answer and its sources, through the same ``/gradio_api/call/ask`` call gradio's page answers later. It
asks for ``/config`` every second and, once gradio answers it, reloads into the full chat (or, when the
user has typed or read an answer here, says the chat is ready instead of wiping it). No outside script or
style: the page is written here; the answer's markdown (code blocks, bold, code, links) is built as elements
whose text is set with ``textContent`` only (an answer quotes the paste), links only to http(s).
"""

from __future__ import annotations

EARLY_CHAT_PAGE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>errata</title>
<style>
body{font-family:system-ui,sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem;color:#222}
textarea{width:100%;box-sizing:border-box;font-family:ui-monospace,monospace;font-size:.9rem}
button{margin:.5rem 0;padding:.4rem 1.2rem;font-size:1rem}
#errata-early-answer .text{border-top:1px solid #ddd;padding-top:.5rem;overflow-wrap:anywhere}
pre{background:#f6f6f6;padding:.5rem;overflow-x:auto}
#errata-early-status{color:#555}
</style></head><body>
<h1>errata</h1>
<p id="errata-early-status">The full chat is still loading; ask here meanwhile. It opens by itself when it is ready.</p>
<form id="errata-early-form">
<textarea id="errata-early-query" rows="10"
 placeholder="Paste a traceback, an error line or a question"></textarea>
<button type="submit" id="errata-early-ask">Ask</button>
</form>
<div id="errata-early-answer" aria-live="polite"></div>
<script>
(function () {
  const form = document.getElementById("errata-early-form");
  const box = document.getElementById("errata-early-query");
  const out = document.getElementById("errata-early-answer");
  const status = document.getElementById("errata-early-status");
  let busy = false;

  function say(text) {
    out.textContent = "";
    const p = document.createElement("p");
    p.textContent = text;
    out.appendChild(p);
  }

  function lastEvent(stream) {
    let found = null;
    for (const block of stream.split("\n\n")) {
      const lines = block.trim().split("\n");
      if (lines.length >= 2 && lines[0].startsWith("event: ") && lines[1].startsWith("data: ")) {
        found = {event: lines[0].slice(7), data: JSON.parse(lines[1].slice(6))};
      }
    }
    return found;
  }

  // The answer's markdown, as far as an answer uses it: code blocks, **bold**, `code` and links.
  function text(value) {  // markdown's backslash escapes (``httpx/\_multipart.py``) read as the character
    return document.createTextNode(value.replace(/\\([\\`*_{}\[\]()#+.!-])/g, "$1"));
  }

  function inline(parent, line) {
    const token = /\*\*([^*]+)\*\*|`([^`]+)`|\[([^\]]+)\]\((https?:\/\/[^)\s]+)\)/g;
    let at = 0;
    for (const m of line.matchAll(token)) {
      parent.appendChild(text(line.slice(at, m.index)));
      let node;
      if (m[1] !== undefined) {
        node = document.createElement("strong");
        node.textContent = m[1];
      } else if (m[2] !== undefined) {
        node = document.createElement("code");
        node.textContent = m[2];
      } else {
        node = document.createElement("a");
        node.href = m[4];
        node.rel = "noopener noreferrer";
        node.appendChild(text(m[3]));
      }
      parent.appendChild(node);
      at = m.index + m[0].length;
    }
    parent.appendChild(text(line.slice(at)));
  }

  function markdown(parent, text) {
    text.split(/^```[\w+-]*$/m).forEach((part, i) => {
      if (i % 2 === 1) {
        const pre = document.createElement("pre");
        const code = document.createElement("code");
        code.textContent = part.replace(/^\n/, "");
        pre.appendChild(code);
        parent.appendChild(pre);
        return;
      }
      part.split("\n").forEach((line, j) => {
        if (j > 0) parent.appendChild(document.createElement("br"));
        inline(parent, line);
      });
    });
  }

  function render(text, citations) {
    out.textContent = "";
    const body = document.createElement("div");
    body.className = "text";
    body.dataset.markdown = text;
    markdown(body, text);
    out.appendChild(body);
    if (!citations || !citations.length) return;
    const list = document.createElement("ol");
    for (const c of citations) {
      const item = document.createElement("li");
      const url = String(c.githubUrl || "");
      const label = (c.repo || "") + " " + (c.errorClass || "");
      if (/^https?:\/\//.test(url)) {
        const link = document.createElement("a");
        link.href = url;
        link.rel = "noopener noreferrer";
        link.textContent = label;
        item.appendChild(link);
      } else {
        item.textContent = label;
      }
      list.appendChild(item);
    }
    out.appendChild(list);
  }

  async function ask(text) {
    const sent = await fetch("gradio_api/call/ask", {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({data: [text]}),
    });
    if (sent.status === 503) {  // the full chat is taking the port over: ask it in a moment
      say("The full chat is taking over; asking again in a moment…");
      await new Promise((done) => setTimeout(done, 1000));
      return ask(text);
    }
    const id = (await sent.json()).event_id;
    const stream = await (await fetch("gradio_api/call/ask/" + encodeURIComponent(id))).text();
    const last = lastEvent(stream);
    if (last && last.event === "complete") {
      render(last.data[0][0], last.data[0][1]);
    } else {
      say((last && last.data && last.data.error) || "errata could not answer this paste.");
    }
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (busy || !box.value.trim()) return;
    busy = true;
    say("Searching the knowledge base…");
    try {
      await ask(box.value);
    } catch (error) {
      say("errata could not be reached (" + error + "); try again in a moment.");
    } finally {
      busy = false;
    }
  });

  async function poll() {
    try {
      const config = await fetch("config", {cache: "no-store"});
      if (config.ok) {
        if (!busy && !box.value.trim() && !out.textContent) {
          location.reload();
          return;
        }
        status.textContent = "The full chat is ready: ";
        const link = document.createElement("a");
        link.href = "./";
        link.id = "errata-early-open";
        link.textContent = "open it";
        status.appendChild(link);
        return;
      }
    } catch (error) {
      // between the starting page and the chat the port is closed for a moment
    }
    setTimeout(poll, 1000);
  }
  setTimeout(poll, 1000);
})();
</script></body></html>
"""
