// Leaderboard pages: charts from embedded JSON, a percentile selector, and table filters
// kept in the URL hash so a link reproduces the view. Plain JS, no dependencies but plotly.
"use strict";

function pageData() {
  const node = document.getElementById("page-data");
  return node ? JSON.parse(node.textContent) : null;
}

function readHash() {
  const params = new URLSearchParams(window.location.hash.slice(1));
  return Object.fromEntries(params.entries());
}

function writeHash(values) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) {
    if (value) params.set(key, value);
  }
  const hash = params.toString();
  history.replaceState(null, "", hash ? "#" + hash : window.location.pathname + window.location.search);
  const link = document.getElementById("permalink");
  if (link) link.href = window.location.href;
}

const PLOT_CONFIG = { responsive: true, displaylogo: false };

function initModelPage(data) {
  const axis = document.getElementById("axis");
  const stat = document.getElementById("stat");
  const price = document.getElementById("price");
  const showAll = document.getElementById("show-non-optimal");
  const state = readHash();
  if (state.axis === "e2e") axis.value = "e2e";
  if (state.stat && data.charts[state.stat]) stat.value = state.stat;
  if (state.price) price.value = state.price;
  showAll.checked = state.all === "1";
  function draw() {
    const charts = data.charts[stat.value];
    // The X-axis choice redraws the charts whose X is interactivity (see charts.py E2E_PREFIX).
    const onAxis = axis.value === "e2e" ? "e2e-" : "";
    const keys = {
      throughput: onAxis + "throughput", ttft: "ttft", e2el: "e2el", cost: onAxis + "cost@" + price.value,
    };
    for (const [slot, key] of Object.entries(keys)) {
      const chart = charts[key];
      const traces = chart.data.map((t) =>
        t.name === "non-optimal points" ? { ...t, visible: showAll.checked ? true : "legendonly" } : t);
      Plotly.react("chart-" + slot, traces, chart.layout, PLOT_CONFIG);
    }
    writeHash({
      axis: axis.value === "e2e" ? "e2e" : "", stat: stat.value, price: price.value,
      all: showAll.checked ? "1" : "",
    });
  }
  for (const control of [axis, stat, price, showAll]) control.addEventListener("change", draw);
  draw();
}

function initHistoryPage(data) {
  Plotly.newPlot("chart-history", data.chart.data, data.chart.layout, PLOT_CONFIG);
}

// An unofficial run's page: one chart per recipe x workload, its points beside the baseline's.
function initRunPage(data) {
  for (const chart of data.charts) Plotly.newPlot(chart.id, chart.data, chart.layout, PLOT_CONFIG);
}

function initTablePage() {
  const selects = Array.from(document.querySelectorAll("select.filter"));
  const rows = Array.from(document.querySelectorAll("#results tbody tr"));
  const state = readHash();
  for (const select of selects) {
    const wanted = state[select.dataset.key];
    if (wanted && Array.from(select.options).some((o) => o.value === wanted)) select.value = wanted;
  }
  function apply() {
    const active = selects.filter((s) => s.value).map((s) => [s.dataset.key, s.value]);
    let shown = 0;
    for (const row of rows) {
      const match = active.every(([key, value]) => row.dataset[key] === value);
      row.hidden = !match;
      if (match) shown += 1;
    }
    document.getElementById("row-count").textContent = String(shown);
    writeHash(Object.fromEntries(active));
  }
  for (const select of selects) select.addEventListener("change", apply);
  apply();
}

document.addEventListener("DOMContentLoaded", () => {
  const page = document.body.dataset.page;
  const data = pageData();
  if (page === "model") initModelPage(data);
  else if (page === "history") initHistoryPage(data);
  else if (page === "table") initTablePage();
  else if (page === "unofficial-run") initRunPage(data);
});
