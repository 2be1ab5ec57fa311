/**
 * Renders the Grafana dashboard (helm/taskgate/files/grafana-dashboard.json, where the chart
 * picks it up) and docs/metrics.md from the gateway's own metrics registry, so neither can
 * name a metric the gateway does not export. Written by scripts/gen-config-schema.ts.
 */
import { createMetrics } from '../src/observability/metrics.js';

interface Panel {
  title: string;
  unit: string;
  exprs: Array<[expr: string, legend: string]>;
}

const PANELS: Panel[] = [
  { title: 'Requests by status', unit: 'reqps', exprs: [['sum by (status) (rate(taskgate_http_requests_total[5m]))', '{{status}}']] },
  {
    title: 'Request latency',
    unit: 's',
    exprs: [
      ['histogram_quantile(0.5, sum by (le) (rate(taskgate_http_request_duration_seconds_bucket[5m])))', 'p50'],
      ['histogram_quantile(0.99, sum by (le) (rate(taskgate_http_request_duration_seconds_bucket[5m])))', 'p99'],
    ],
  },
  { title: 'Upstream latency (p99, to headers)', unit: 's', exprs: [['histogram_quantile(0.99, sum by (le, upstream) (rate(taskgate_upstream_response_seconds_bucket[5m])))', '{{upstream}}']] },
  { title: 'Upstream errors', unit: 'ops', exprs: [['sum by (upstream, kind) (rate(taskgate_upstream_errors_total[5m]))', '{{upstream}} {{kind}}']] },
  { title: 'Tasks created by tool', unit: 'ops', exprs: [['sum by (tool) (rate(taskgate_tasks_created_total[5m]))', '{{tool}}']] },
  { title: 'Live tasks by status', unit: 'short', exprs: [['sum by (status) (taskgate_tasks_live)', '{{status}}']] },
  {
    title: 'Time to terminal status',
    unit: 's',
    exprs: [
      ['histogram_quantile(0.5, sum by (le) (rate(taskgate_task_time_to_terminal_seconds_bucket[15m])))', 'p50'],
      ['histogram_quantile(0.9, sum by (le) (rate(taskgate_task_time_to_terminal_seconds_bucket[15m])))', 'p90'],
    ],
  },
  { title: 'Task operations by outcome', unit: 'ops', exprs: [['sum by (method, outcome) (rate(taskgate_task_operations_total[5m]))', '{{method}} {{outcome}}']] },
  { title: 'Polls by outcome', unit: 'ops', exprs: [['sum by (outcome) (rate(taskgate_polls_total[5m]))', '{{outcome}}']] },
  { title: 'Detector firings', unit: 'short', exprs: [['sum by (detector) (increase(taskgate_detector_events_total[5m]))', '{{detector}}']] },
  { title: 'Tasks forgotten', unit: 'ops', exprs: [['sum by (reason) (rate(taskgate_tasks_forgotten_total[5m]))', '{{reason}}']] },
  {
    title: 'Store latency (p99) and errors',
    unit: 's',
    exprs: [
      ['histogram_quantile(0.99, sum by (le, operation) (rate(taskgate_store_operation_seconds_bucket[5m])))', 'p99 {{operation}}'],
      ['sum by (operation) (rate(taskgate_store_errors_total[5m]))', 'errors {{operation}}'],
    ],
  },
  {
    title: 'Token verification',
    unit: 'ops',
    exprs: [
      ['sum by (outcome) (rate(taskgate_jwt_verifications_total[5m]))', '{{outcome}}'],
      ['sum by (outcome) (rate(taskgate_jwks_refreshes_total[5m]))', 'jwks {{outcome}}'],
    ],
  },
  { title: 'Rejected requests by reason', unit: 'ops', exprs: [['sum by (reason) (rate(taskgate_rejected_requests_total[5m]))', '{{reason}}']] },
  {
    title: 'Gateway-run tasks: calls held and how tasks ended',
    unit: 'short',
    exprs: [
      ['sum(taskgate_provided_calls_running)', 'calls held'],
      ['sum by (outcome) (increase(taskgate_provided_tasks_ended_total[5m]))', 'ended {{outcome}}'],
      ['sum(increase(taskgate_provided_lease_takeovers_total[5m]))', 'lease takeovers'],
    ],
  },
  {
    title: 'Gateway-run tasks: backend call duration',
    unit: 's',
    exprs: [
      ['histogram_quantile(0.5, sum by (le) (rate(taskgate_provided_call_duration_seconds_bucket[15m])))', 'p50'],
      ['histogram_quantile(0.99, sum by (le) (rate(taskgate_provided_call_duration_seconds_bucket[15m])))', 'p99'],
    ],
  },
  {
    title: 'Token exchanges and per-principal limits',
    unit: 'ops',
    exprs: [
      ['sum by (outcome) (rate(taskgate_token_exchanges_total[5m]))', 'exchange {{outcome}}'],
      ['sum by (limit) (rate(taskgate_limit_rejections_total[5m]))', 'limited {{limit}}'],
    ],
  },
  {
    title: 'Status push: listeners and notifications',
    unit: 'short',
    exprs: [
      ['sum(taskgate_push_subscriptions)', 'listeners'],
      ['sum by (outcome, reason) (rate(taskgate_push_notifications_total[5m]))', 'notifications {{outcome}} {{reason}}'],
      ['sum by (outcome) (rate(taskgate_push_upstream_polls_total[5m]))', 'gateway polls {{outcome}}'],
    ],
  },
  {
    title: 'Status push: delivery lag',
    unit: 's',
    exprs: [
      ['histogram_quantile(0.5, sum by (le) (rate(taskgate_push_delivery_lag_seconds_bucket[5m])))', 'p50'],
      ['histogram_quantile(0.99, sum by (le) (rate(taskgate_push_delivery_lag_seconds_bucket[5m])))', 'p99'],
    ],
  },
  {
    title: 'Policy reloads',
    unit: 'short',
    exprs: [
      ['sum by (outcome) (increase(taskgate_config_reloads_total[15m]))', '{{outcome}}'],
      ['sum(taskgate_config_draining_policies)', 'draining policies'],
    ],
  },
  {
    title: 'Process',
    unit: 'bytes',
    exprs: [
      ['taskgate_process_resident_memory_bytes', 'rss {{instance}}'],
      ['taskgate_nodejs_heap_size_used_bytes', 'heap {{instance}}'],
    ],
  },
];

export function renderDashboard(): string {
  const panels = PANELS.map((panel, index) => ({
    id: index + 1,
    type: 'timeseries',
    title: panel.title,
    datasource: { type: 'prometheus', uid: '${datasource}' },
    gridPos: { h: 8, w: 12, x: (index % 2) * 12, y: Math.floor(index / 2) * 8 },
    fieldConfig: { defaults: { unit: panel.unit }, overrides: [] },
    targets: panel.exprs.map(([expr, legendFormat], i) => ({ refId: String.fromCharCode(65 + i), expr, legendFormat })),
  }));
  const dashboard = {
    title: 'taskgate',
    uid: 'taskgate',
    tags: ['taskgate', 'mcp'],
    timezone: 'browser',
    schemaVersion: 39,
    refresh: '30s',
    time: { from: 'now-6h', to: 'now' },
    templating: { list: [{ name: 'datasource', type: 'datasource', query: 'prometheus', label: 'Prometheus' }] },
    panels,
  };
  return `${JSON.stringify(dashboard, null, 2)}\n`;
}

export function renderMetricsDoc(): string {
  const all = createMetrics({ defaultMetrics: false }).registry.getMetricsAsArray();
  const own = [...all].sort((a, b) => a.name.localeCompare(b.name));
  const rows = own.map((m) => {
    // prom-client's metric objects carry their label names, though its types leave them out.
    const labels = ((m as unknown as { labelNames?: string[] }).labelNames ?? []).join(', ');
    return `| \`${m.name}\` | ${m.type} | ${labels || '—'} | ${m.help} |`;
  });
  return `# Metrics

<!-- Generated from src/observability/metrics.ts by \`npx tsx scripts/gen-config-schema.ts\`; do not edit. -->

Served in the Prometheus text format at \`/metrics\` on the admin listener (\`admin.host\`,
\`admin.port\`), never on the client-facing one. Every label is bounded: route paths and
upstream names come from the policy, JSON-RPC methods are folded into a fixed set, tool names
past 200 distinct ones count as \`other\`; never a task handle, a session id or a subject.
Node.js process metrics (\`taskgate_process_*\`, \`taskgate_nodejs_*\`) are exported too.

\`taskgate_tasks_live\` is counted by each replica from the status changes it sees: sum it over
replicas (\`sum by (status) (taskgate_tasks_live)\`); one replica's value alone can be negative.

| metric | type | labels | meaning |
|---|---|---|---|
${rows.join('\n')}

The Grafana dashboard built on these is \`helm/taskgate/files/grafana-dashboard.json\`; the
alert rules for the detectors are \`helm/taskgate/files/prometheus-rules.yaml\` (see
[operations.md](operations.md)).
`;
}
