// The admin API client: the operator's token goes in the Authorization header of every call,
// and nowhere else (no cookie, no URL). It lives in this tab's sessionStorage.

const BASE = '/console/api/v1';
const KEY = 'taskgate-console-token';

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code;
    this.data = body?.error?.data;
  }
}

export const session = {
  get token() {
    return sessionStorage.getItem(KEY) ?? '';
  },
  set token(value) {
    if (value) sessionStorage.setItem(KEY, value);
    else sessionStorage.removeItem(KEY);
  },
};

export async function call(path, { method = 'GET', query, body } = {}) {
  const url = new URL(`${BASE}${path}`, location.origin);
  for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined && value !== '') url.searchParams.set(name, String(value));
  const headers = { authorization: `Bearer ${session.token}`, accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store', credentials: 'omit' });
  const parsed = await response.json().catch(() => undefined);
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}
