// The console page: sign-in, tabs, and the refresh loop (every 2 s, plots every 10 s) that
// keeps the open tab live. Everything shown comes from the admin API (api.js).
import { ApiError, call, session } from './api.js';
import { drawLines } from './plots.js';
import { PolicyView, PrincipalsView, UpstreamsView } from './other-views.js';
import { TasksView } from './tasks-view.js';

const REFRESH_MS = 2000;
const PLOT_EVERY = 5;
const STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
const POLL_OUTCOMES = ['forwarded', 'cached', 'rejected'];
const LAG_SERIES = ['mean', 'p95'];

class ConsoleApp {
  constructor() {
    this.role = undefined;
    this.tab = 'tasks';
    this.timer = undefined;
    this.wake = undefined;
    this.looping = false;
    this.dirty = false;
    this.ticks = 0;
    this.views = { tasks: new TasksView(this), principals: new PrincipalsView(this), upstreams: new UpstreamsView(), policy: new PolicyView() };
    document.getElementById('sign-in-form').addEventListener('submit', (event) => {
      event.preventDefault();
      session.token = document.getElementById('token').value.trim();
      document.getElementById('token').value = '';
      void this.start();
    });
    document.getElementById('sign-out').addEventListener('click', () => this.signOut());
    const tabs = [...document.querySelectorAll('[role="tab"]')];
    tabs.forEach((tab, index) => {
      tab.addEventListener('click', () => this.show(tab.id.replace('tab-button-', '')));
      // Arrow keys move between tabs, as the ARIA tabs pattern has it.
      tab.addEventListener('keydown', (event) => {
        const step = event.key === 'ArrowRight' ? 1 : event.key === 'ArrowLeft' ? -1 : 0;
        if (step === 0) return;
        const next = tabs[(index + step + tabs.length) % tabs.length];
        next.focus();
        this.show(next.id.replace('tab-button-', ''));
      });
    });
  }

  async start() {
    if (!session.token) return this.showSignIn();
    try {
      const me = await call('/me');
      this.role = me.role;
      document.getElementById('who').textContent = `${me.name} · ${me.role}${me.via === 'jwt' ? ' (JWT)' : ''}`;
    } catch (error) {
      session.token = '';
      return this.showSignIn(error instanceof ApiError && error.status === 403 ? 'This token has no console role.' : error instanceof ApiError && error.status === 401 ? 'This token was not accepted.' : error.message);
    }
    document.getElementById('sign-in').hidden = true;
    document.getElementById('app').hidden = false;
    document.getElementById('sign-out').hidden = false;
    this.ticks = 0;
    this.refreshSoon();
  }

  showSignIn(message = '') {
    this.role = undefined;
    this.wake?.();
    document.getElementById('app').hidden = true;
    document.getElementById('sign-out').hidden = true;
    document.getElementById('sign-in').hidden = false;
    document.getElementById('who').textContent = '';
    document.getElementById('sign-in-error').textContent = message;
    document.getElementById('token').focus();
  }

  signOut() {
    session.token = '';
    this.role = undefined;
    this.showSignIn();
  }

  show(tab) {
    this.tab = tab;
    for (const button of document.querySelectorAll('[role="tab"]')) {
      const selected = button.id === `tab-button-${tab}`;
      button.setAttribute('aria-selected', String(selected));
      button.tabIndex = selected ? 0 : -1;
      document.getElementById(button.getAttribute('aria-controls')).hidden = !selected;
    }
    this.refreshSoon();
  }

  notice(text) {
    document.getElementById('freshness').textContent = text;
  }

  /** The next refresh now (after a filter, a sort, an action), then every REFRESH_MS. */
  refreshSoon() {
    this.dirty = true;
    if (this.wake) this.wake();
    else if (!this.looping) void this.loop();
  }

  /** One loop per signed-in page: refresh, wait REFRESH_MS or until woken, again. */
  async loop() {
    this.looping = true;
    try {
      while (session.token && this.role) {
        this.dirty = false;
        await this.refreshOnce();
        if (this.dirty) continue;
        await new Promise((resolve) => {
          this.wake = resolve;
          this.timer = setTimeout(resolve, REFRESH_MS);
        });
        this.wake = undefined;
        clearTimeout(this.timer);
      }
    } finally {
      this.looping = false;
    }
  }

  async refreshOnce() {
    const error = document.getElementById('app-error');
    try {
      await this.views[this.tab].refresh();
      if (this.tab === 'tasks' && this.ticks % PLOT_EVERY === 0) await this.refreshPlots();
      this.ticks++;
      error.textContent = '';
      document.getElementById('freshness').textContent = `Updated ${new Date().toLocaleTimeString()}`;
    } catch (failure) {
      if (failure instanceof ApiError && (failure.status === 401 || failure.status === 403)) {
        session.token = '';
        this.showSignIn('Signed out: the token is no longer accepted.');
        return;
      }
      error.textContent = `Could not refresh: ${failure.message}`;
    }
  }

  async refreshPlots() {
    const samples = await call('/samples');
    drawLines(document.getElementById('plot-status'), document.getElementById('plot-status-legend'), samples.statuses.map((s) => ({ at: s.at, values: s.counts })), STATUSES);
    drawLines(document.getElementById('plot-polls'), document.getElementById('plot-polls-legend'), samples.polls.map((s) => ({ at: s.at, values: s.perMinute })), POLL_OUTCOMES);
    // Intervals without a delivery have no lag: they are left out rather than drawn as 0.
    const lag = samples.pushLag.filter((s) => s.deliveries > 0).map((s) => ({ at: s.at, values: { mean: s.meanMs, p95: s.p95Ms } }));
    drawLines(document.getElementById('plot-lag'), document.getElementById('plot-lag-legend'), lag, LAG_SERIES);
  }
}

void new ConsoleApp().start();
