// A filter box above long lists the page holds whole; the pages work without it (no data is fetched here). Paged
// lists (data-server-search) have the server's name search instead, which covers every page.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const table of document.querySelectorAll("table.list:not([data-server-search])")) {
    const rows = Array.from(table.tBodies[0] ? table.tBodies[0].rows : []);
    if (rows.length < 15) continue;
    const box = document.createElement("input");
    box.type = "search";
    box.className = "filter";
    box.placeholder = "Filter " + rows.length + " rows";
    box.addEventListener("input", () => {
      const needle = box.value.toLowerCase();
      for (const row of rows) row.hidden = needle !== "" && !row.textContent.toLowerCase().includes(needle);
    });
    table.before(box);
  }
});
