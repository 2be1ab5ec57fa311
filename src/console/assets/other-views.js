// The Principals, Upstreams and Policy tabs.
import { call } from './api.js';
import { askForReason } from './action-dialog.js';
import { duration, el, fill } from './dom.js';

export class PrincipalsView {
  constructor(app) {
    this.app = app;
  }

  async refresh() {
    const listing = await call('/principals', { query: { limit: 200 } });
    const acting = this.app.role === 'operator';
    const rows = listing.principals.map((p) =>
      el(
        'tr',
        {},
        // A principal listed for its refusals alone has no task record to name its subject.
        el('td', {}, p.subject ?? el('span', { class: 'muted' }, p.tasks === 0 ? 'no task: subject not kept' : 'redacted')),
        el('td', {}, p.issuer ?? '—'),
        el('td', {}, el('code', {}, p.key)),
        el('td', {}, String(p.liveTasks)),
        el('td', {}, String(p.tasks)),
        el('td', {}, p.upstreams.join(', ') || '—'),
        el('td', {}, String(p.thisReplica.pollsPerMinute)),
        el('td', { title: 'not_found / denied / throttled' }, `${p.thisReplica.refusals.not_found} / ${p.thisReplica.refusals.denied} / ${p.thisReplica.refusals.throttled}`),
        el('td', {}, p.thisReplica.enumerationAlerts > 0 ? el('span', { class: 'alert' }, String(p.thisReplica.enumerationAlerts)) : '0'),
        el('td', {}, p.suspendedForMs > 0 ? `for ${duration(p.suspendedForMs)}` : 'no'),
        el(
          'td',
          {},
          acting
            ? p.suspendedForMs > 0
              ? el('button', { type: 'button', dataset: { focusKey: `unsuspend:${p.key}` }, 'aria-label': `Lift the suspension of ${p.subject ?? p.key}`, onclick: () => this.unsuspend(p) }, 'Unsuspend')
              : el('button', { type: 'button', class: 'danger', dataset: { focusKey: `suspend:${p.key}` }, 'aria-label': `Suspend ${p.subject ?? p.key}`, onclick: () => this.suspend(p) }, 'Suspend')
            : '',
        ),
      ),
    );
    if (rows.length === 0) rows.push(el('tr', {}, el('td', { class: 'empty', colspan: 11 }, 'No principal holds a live task or was refused lately.')));
    const body = document.getElementById('principals-body');
    const focused = document.activeElement?.dataset?.focusKey;
    fill(body, rows);
    if (focused) body.querySelector(`[data-focus-key="${CSS.escape(focused)}"]`)?.focus();
  }

  async suspend(principal) {
    const done = await askForReason({
      title: 'Suspend principal',
      target: `Every tasks/* request of ${principal.subject ?? principal.key} is answered 429 until the suspension ends.`,
      withDuration: true,
      run: (entered) => call(`/principals/${encodeURIComponent(principal.key)}/suspend`, { method: 'POST', body: entered }),
    });
    if (done) this.app.notice(`Suspended until ${new Date(done.suspendedUntil).toLocaleTimeString()}.`);
    this.app.refreshSoon();
  }

  async unsuspend(principal) {
    const done = await askForReason({
      title: 'Lift suspension',
      target: `${principal.subject ?? principal.key} may use its tasks again.`,
      run: (entered) => call(`/principals/${encodeURIComponent(principal.key)}/unsuspend`, { method: 'POST', body: entered }),
    });
    if (done) this.app.notice('Suspension lifted.');
    this.app.refreshSoon();
  }
}

export class UpstreamsView {
  async refresh() {
    const { upstreams, providedCallsRunning } = await call('/upstreams');
    document.getElementById('provided-running').textContent = `Backend calls of gateway-run tasks held by this replica: ${providedCallsRunning}`;
    const rows = upstreams.flatMap((upstream) =>
      upstream.instances.map((instance, i) =>
        el(
          'tr',
          {},
          el('td', {}, i === 0 ? upstream.name : ''),
          el('td', {}, instance.url),
          el('td', {}, instance.healthy ? 'healthy' : `cooling down (${duration(instance.coolingForMs)})`),
          el('td', {}, String(instance.running)),
          el('td', {}, String(instance.pending)),
          el('td', {}, String(instance.connected)),
          el('td', {}, i === 0 ? String(upstream.liveTasks) : ''),
          el('td', {}, i === 0 ? upstream.providedTools.join(', ') || '—' : ''),
          el('td', { class: 'message' }, i === 0 ? supportLabel(upstream.thisReplica.taskSupport) : ''),
        ),
      ),
    );
    fill(document.getElementById('upstreams-body'), rows);
  }
}

/** What this replica learnt of an upstream's own task support, in a line. */
function supportLabel(support) {
  if (!support) return 'nothing yet';
  const parts = [];
  if (support.modernExtension !== undefined) parts.push(`2026: ${support.modernExtension ? 'tasks extension' : 'no tasks extension'}`);
  const tools = Object.entries(support.legacyTools);
  if (support.legacyToolsLearnt > 0) {
    const own = tools.filter(([, taskSupport]) => taskSupport !== 'forbidden').map(([tool, taskSupport]) => `${tool} (${taskSupport})`);
    parts.push(`2025: ${support.legacyToolsLearnt} tools, ${own.length > 0 ? `own tasks: ${own.join(', ')}` : 'none with tasks of its own'}${tools.length < support.legacyToolsLearnt ? ' (first shown)' : ''}`);
  }
  return parts.join('; ') || 'nothing yet';
}

export class PolicyView {
  async refresh() {
    const policy = await call('/policy');
    document.getElementById('policy-hash').textContent = policy.hash;
    const rows = policy.reloads.map((reload) =>
      el(
        'tr',
        {},
        el('td', {}, el('time', { datetime: reload.at }, new Date(reload.at).toLocaleString())),
        el('td', {}, reload.outcome),
        el('td', {}, reload.source),
        el('td', {}, el('code', {}, reload.hash.slice(0, 12))),
        el('td', { class: 'message' }, reload.changed.join(', ') || '—'),
        el('td', {}, String(reload.problems)),
      ),
    );
    if (rows.length === 0) rows.push(el('tr', {}, el('td', { class: 'empty', colspan: 6 }, 'No reload since this replica started.')));
    fill(document.getElementById('reloads-body'), rows);
  }
}
