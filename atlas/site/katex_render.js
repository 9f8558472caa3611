// Render LaTeX with KaTeX at build time. One JSON request per line on stdin:
//   {"tex": "...", "display": true}  ->  {"html": "..."} or {"error": "..."}
// KaTeX comes from the project's node_modules (npm ci); only \htmlClass and \htmlData are trusted.
"use strict";
const katex = require("katex");
const readline = require("readline");

const trust = (context) => context.command === "\\htmlClass" || context.command === "\\htmlData";
// Strict about everything but the HTML extension, which carries the stream classes and symbol keys.
const strict = (code) => (code === "htmlExtension" ? "ignore" : "error");
const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on("line", (line) => {
  let reply;
  try {
    const request = JSON.parse(line);
    reply = {
      html: katex.renderToString(request.tex, {
        displayMode: Boolean(request.display),
        throwOnError: true,
        strict,
        trust,
        output: "html",   // pages carry role="math" and the LaTeX as aria-label instead of MathML: half the weight
      }),
    };
  } catch (err) {
    reply = { error: String(err && err.message ? err.message : err) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
