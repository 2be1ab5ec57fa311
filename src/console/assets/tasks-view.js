// The Tasks tab: the filters, the sortable table of live tasks, the pager, and a task's own
// panel with its audit timeline and the cancel button.
import { call } from './api.js';
import { askForReason } from './action-dialog.js';
import { duration, el, fill, statusBadge } from './dom.js';

const PAGE = 50;

export class TasksView {
  constructor(app) {
    this.app = app;
    this.query = { sort: 'age', order: 'desc', offset: 0 };
    this.detailId = undefined;
    this.lastListing = undefined;
    document.getElementById('filters').addEventListener('input', () => this.filtersChanged());
    document.getElementById('filters').addEventListener('submit', (event) => event.preventDefault());
    for (const button of document.querySelectorAll('#tasks-table th button[data-sort]')) {
      button.addEventListener('click', () => this.sortBy(button.dataset.sort));
    }
    document.getElementById('page-previous').addEventListener('click', () => this.page(-1));
    document.getElementById('page-next').addEventListener('click', () => this.page(1));
    document.getElementById('task-close').addEventListener('click', () => this.closeDetail());
    document.getElementById('task-cancel').addEventListener('click', () => this.cancel(this.detailId));
  }

  filtersChanged() {
    this.query.offset = 0;
    this.app.refreshSoon();
  }

  sortBy(key) {
    this.query.order = this.query.sort === key && this.query.order === 'desc' ? 'asc' : 'desc';
    this.query.sort = key;
    for (const th of document.querySelectorAll('#tasks-table th[aria-sort]')) {
      const button = th.querySelector('button');
      th.setAttribute('aria-sort', button?.dataset.sort === key ? (this.query.order === 'asc' ? 'ascending' : 'descending') : 'none');
    }
    this.app.refreshSoon();
  }

  page(step) {
    const total = this.lastListing?.total ?? 0;
    const next = this.query.offset + step * PAGE;
    if (next < 0 || next >= Math.max(total, 1)) return;
    this.query.offset = next;
    this.app.refreshSoon();
  }

  filters() {
    const form = document.getElementById('filters');
    const value = (name) => form.elements.namedItem(name).value.trim();
    return { principal: value('principal'), upstream: value('upstream'), tool: value('tool'), status: value('status'), kind: value('kind') };
  }

  async refresh() {
    const listing = await call('/tasks', { query: { ...this.filters(), sort: this.query.sort, order: this.query.order, offset: this.query.offset, limit: PAGE } });
    this.lastListing = listing;
    this.renderChoices(listing.counts);
    this.renderSummary(listing);
    this.renderRows(listing);
    if (this.detailId) await this.refreshDetail();
  }

  renderChoices(counts) {
    for (const [name, values] of [['upstream', counts.upstream], ['tool', counts.tool]]) {
      const select = document.getElementById(`filter-${name}`);
      const chosen = select.value;
      const names = Object.keys(values).sort();
      if (chosen && !names.includes(chosen)) names.push(chosen);
      const wanted = ['', ...names].join('\n');
      if (select.dataset.options === wanted) continue;
      select.dataset.options = wanted;
      fill(select, el('option', { value: '' }, 'all'), names.map((n) => el('option', { value: n }, `${n}${values[n] ? ` (${values[n]})` : ''}`)));
      select.value = chosen;
    }
  }

  renderSummary(listing) {
    const status = listing.counts.status;
    const live = (status.working ?? 0) + (status.input_required ?? 0);
    fill(
      document.getElementById('summary'),
      el('h2', {}, 'Now'),
      el(
        'dl',
        {},
        el('dt', {}, 'Tasks read'), el('dd', {}, String(listing.scanned), listing.truncated ? ' (more exist: console.maxScan)' : ''),
        el('dt', {}, 'Not yet ended'), el('dd', {}, String(live)),
        el('dt', {}, 'Gateway-run'), el('dd', {}, String(listing.counts.kind.gateway ?? 0)),
        el('dt', {}, 'Upstreams'), el('dd', {}, String(Object.keys(listing.counts.upstream).length)),
      ),
    );
  }

  renderRows(listing) {
    const body = document.getElementById('tasks-body');
    const focused = document.activeElement?.dataset?.focusKey;
    const acting = this.app.role === 'operator';
    const rows = listing.tasks.map((task) =>
      el(
        'tr',
        { dataset: { id: task.id } },
        el('td', {}, el('button', { type: 'button', class: 'link', dataset: { focusKey: `open:${task.id}` }, 'aria-label': `Open task ${task.id}`, onclick: () => this.openDetail(task.id) }, task.id)),
        el('td', {}, principalCell(task.principal)),
        el('td', {}, task.tool),
        el('td', {}, task.upstream),
        el('td', { title: task.instance }, hostOf(task.instance)),
        el('td', {}, kindLabel(task.kind)),
        el('td', {}, eraLabel(task)),
        el('td', {}, statusBadge(task.status)),
        el('td', { class: 'message' }, task.statusMessage ?? ''),
        el('td', {}, duration(task.ageMs)),
        el('td', {}, duration(task.ttlLeftMs)),
        el('td', { class: 'polls' }, pollsCell(task.polls, listing.generatedAt)),
        el('td', { class: 'push' }, String(task.thisReplica.pushListeners)),
        el('td', {}, acting && !ended(task.status) ? el('button', { type: 'button', class: 'danger', dataset: { focusKey: `cancel:${task.id}` }, 'aria-label': `Cancel task ${task.id}`, onclick: () => this.cancel(task.id) }, 'Cancel') : ''),
      ),
    );
    if (rows.length === 0) rows.push(el('tr', {}, el('td', { class: 'empty', colspan: 14 }, 'No live task matches.')));
    fill(body, rows);
    if (focused) body.querySelector(`[data-focus-key="${CSS.escape(focused)}"]`)?.focus();
    const first = listing.total === 0 ? 0 : listing.offset + 1;
    const last = Math.min(listing.total, listing.offset + listing.tasks.length);
    document.getElementById('page-position').textContent = `${first}–${last} of ${listing.total}`;
    document.getElementById('tasks-caption').textContent = `Live tasks (${listing.total} shown of ${listing.scanned} read)`;
    document.getElementById('page-previous').disabled = listing.offset === 0;
    document.getElementById('page-next').disabled = last >= listing.total;
  }

  async openDetail(id) {
    this.detailId = id;
    await this.refreshDetail();
    const panel = document.getElementById('task-detail');
    panel.hidden = false;
    panel.focus();
  }

  closeDetail() {
    const id = this.detailId;
    this.detailId = undefined;
    document.getElementById('task-detail').hidden = true;
    document.querySelector(`[data-focus-key="open:${CSS.escape(id ?? '')}"]`)?.focus();
  }

  async refreshDetail() {
    let task;
    try {
      task = await call(`/tasks/${encodeURIComponent(this.detailId)}`);
    } catch (error) {
      if (error.status !== 404) throw error;
      fill(document.getElementById('task-fields'), el('dt', {}, 'Task'), el('dd', {}, `${this.detailId}: no longer live`));
      document.getElementById('task-cancel').hidden = true;
      fill(document.getElementById('task-timeline'));
      return;
    }
    document.getElementById('task-detail-title').textContent = `Task ${task.id}`;
    const fields = [
      ['Principal', principalLabel(task.principal)], ['Principal key', task.principal.key], ['Tool', task.tool], ['Upstream', task.upstream],
      ['Instance', task.instance], ['Kind', kindLabel(task.kind)], ['Client era', task.clientEra], ['Backend era', task.backendEra], ['Status', statusBadge(task.status)],
      ['Status message', task.statusMessage ?? '—'], ['Created', task.createdAt], ['Last updated', task.lastUpdatedAt], ['Age', duration(task.ageMs)],
      ['TTL', duration(task.ttlMs)], ['TTL left', duration(task.ttlLeftMs)], ['Poll interval', duration(task.pollIntervalMs)], ['Read once', task.readOnce ? 'yes' : 'no'],
      ['Polls', `${task.polls.forwarded} forwarded, ${task.polls.early} early, ${task.polls.abusive} abusive`], ['Last poll', task.polls.lastPollAt ?? 'never'],
      ['Push listens', `${task.thisReplica.pushListeners} (this replica)`],
    ];
    fill(document.getElementById('task-fields'), fields.flatMap(([name, value]) => [el('dt', {}, name), el('dd', {}, value)]));
    document.getElementById('task-cancel').hidden = this.app.role !== 'operator' || ended(task.status);
    const timeline = task.timeline ?? [];
    fill(
      document.getElementById('task-timeline'),
      timeline.length === 0
        ? el('li', { class: 'muted' }, 'No events recorded on this replica.')
        : timeline.map((entry) =>
            el(
              'li',
              {},
              el('time', { datetime: entry.at }, new Date(entry.at).toLocaleTimeString()),
              entry.count > 1 ? ['–', el('time', { datetime: entry.lastAt }, new Date(entry.lastAt).toLocaleTimeString())] : '',
              ` ${entry.event}`,
              entry.count > 1 ? ` ×${entry.count}` : '',
              entry.allowed ? '' : ' (refused)',
              entry.status ? ` → ${entry.status}` : '',
              entry.reason ? ` [${entry.reason}]` : '',
              entry.operator ? ` by ${entry.operator.name} (${entry.operator.role}): ${entry.operatorReason ?? ''}` : '',
            ),
          ),
    );
  }

  async cancel(id) {
    if (!id) return;
    const done = await askForReason({
      title: 'Cancel task',
      target: `Task ${id} will be cancelled at its backend; its owner then sees it cancelled.`,
      run: (entered) => call(`/tasks/${encodeURIComponent(id)}/cancel`, { method: 'POST', body: { reason: entered.reason } }),
    });
    if (done) this.app.notice(`Task ${id}: cancel ${done.status === 'cancelled' ? 'done' : 'sent to the backend'}.`);
    this.app.refreshSoon();
  }
}

/** Subject (or the key's start) on one line, the issuer's host under it. */
function principalCell(principal) {
  const name = principal.subject ?? `key ${principal.key.slice(0, 10)}…`;
  return [el('span', { class: 'primary' }, name), principal.issuer ? el('span', { class: 'secondary' }, hostOf(principal.issuer)) : ''];
}

export function principalLabel(principal) {
  if (principal.subject) return principal.issuer ? `${principal.subject} (${hostOf(principal.issuer)})` : principal.subject;
  return `key ${principal.key.slice(0, 10)}…${principal.issuer ? ` (${hostOf(principal.issuer)})` : ''}`;
}

function hostOf(issuer) {
  try {
    return new URL(issuer).host;
  } catch {
    return issuer;
  }
}

/** One era when client and backend speak the same (today, always), else both. */
function eraLabel(task) {
  return task.clientEra === task.backendEra ? task.clientEra : `${task.clientEra} → ${task.backendEra}`;
}

/** forwarded / early / abusive, and how long ago the last poll was (by the listing's clock). */
function pollsCell(polls, generatedAt) {
  const counts = el('span', { class: 'primary', title: 'forwarded / early / abusive' }, `${polls.forwarded} / ${polls.early} / ${polls.abusive}`);
  if (!polls.lastPollAt) return [counts, el('span', { class: 'secondary' }, 'never polled')];
  const ago = Math.max(0, Date.parse(generatedAt) - Date.parse(polls.lastPollAt));
  return [counts, el('span', { class: 'secondary' }, `last ${duration(ago)} ago`)];
}

function kindLabel(kind) {
  return kind === 'gateway' ? 'gateway-run' : kind === 'background' ? 'background call' : 'backend';
}

function ended(status) {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}
