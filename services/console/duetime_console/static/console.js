// The console's only script of its own; every page works without it.
// - The sign-in form's zone picker starts on the browser's own zone.
// - "/" moves the focus to the page's search field, as on many sites.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const picker = document.querySelector("select[data-browser-zone]");
  if (picker) {
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if ([...picker.options].some((option) => option.value === zone)) picker.value = zone;
  }
});
document.addEventListener("keydown", (event) => {
  const typing = event.target.closest("input, textarea, select, [contenteditable]");
  if (event.key === "/" && !typing) {
    const search = document.querySelector("[data-search]");
    if (search) {
      event.preventDefault();
      search.focus();
    }
  }
});
