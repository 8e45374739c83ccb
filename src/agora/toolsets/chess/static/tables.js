// "Create a table", on the /play page and on every table's page: POST /play/tables, then a
// link to the new table and its agent endpoint. It lists nothing: a table's link carries its
// human token, and only its creator gets it.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const base = document.querySelector('meta[name="agora-base"]')?.content ?? "";

  // The name's form submits on Enter as on its button; the page stays (no navigation).
  async function createTable(event) {
    event.preventDefault();
    const name = $("new-table-name").value.trim();
    const res = await fetch(`${base}/play/tables`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(name ? { name } : {}),
    });
    const data = await res.json().catch(() => ({ error: res.statusText }));
    const out = $("new-table");
    out.replaceChildren();
    if (res.status === 401) {
      // A server with [[principals]] creates tables for them only, and a page sends no
      // bearer token: say how a table is made there instead of a bare "Unauthorized".
      // The typed name only where it is one (nothing in it can break the shell's quotes).
      const url = `${location.origin}${base}/play/tables`;
      // No name: the server picks a fresh one, as the button does.
      const lower = name.toLowerCase();
      const taken = ["static", "tables", "api"].includes(lower);
      const named = !taken && /^[a-z0-9][a-z0-9_-]{0,39}$/.test(lower);
      const body = !name ? "{}" : `{"name": "${named ? lower : "NAME"}"}`;
      out.textContent =
        "This server creates tables only for its principals, and a browser sends no bearer " +
        "token. Create one with your token: curl -X POST " + url +
        " -H 'Authorization: Bearer YOUR_TOKEN' -H 'Content-Type: application/json'" +
        ` -d '${body}', then open the humanUrl it answers` +
        (!name || named ? "" : " (NAME: 1 to 40 letters a-z, digits, _ or -, not static," +
          " tables or api)") +
        "; or play at the table agora serve printed at start.";
      return;
    }
    if (!res.ok) {
      out.textContent = data.error || res.statusText;
      return;
    }
    const link = document.createElement("a");
    link.href = data.humanUrl;
    link.textContent = `Play at table ${data.table}`;
    const endpoint = document.createTextNode(`Agent endpoint: ${data.agent.mcpHttp}`);
    // The link to share: the play link above is the human's seat, this one only watches.
    const watch = document.createElement("a");
    watch.href = data.spectatorUrl;
    watch.textContent = data.spectatorUrl;
    const share = document.createTextNode("Link for others to watch (no seat): ");
    const br = () => document.createElement("br");
    out.append(link, br(), endpoint, br(), share, watch);
  }

  $("new-table-form").addEventListener("submit", createTable);
})();
