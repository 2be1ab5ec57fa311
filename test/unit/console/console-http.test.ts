/**
 * The console's error answer (src/console/console-http.ts): the catalogue's code, status and
 * text for a known error, 503 for a store that did not answer, and for anything else a 500
 * that names no library and repeats none of its message.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { errorAnswer } from '../../../src/console/console-http.js';
import { describeError, GatewayError } from '../../../src/errors.js';
import { StoreUnavailableError } from '../../../src/store/store-unavailable.js';

describe('console error answer', () => {
  it('answers a gateway error with its catalogue status, code, message and data', () => {
    const answer = errorAnswer(new GatewayError('TG_ERR_CONSOLE_CONFLICT', { data: { backendError: { code: -32602 } } }));
    assert.equal(answer.status, describeError('TG_ERR_CONSOLE_CONFLICT').httpStatus);
    assert.equal(answer.known, true);
    assert.deepEqual(answer.body, { error: { code: 'TG_ERR_CONSOLE_CONFLICT', message: describeError('TG_ERR_CONSOLE_CONFLICT').message, data: { backendError: { code: -32602 } } } });
  });

  it('answers a store that did not answer with 503 and its Retry-After', () => {
    const answer = errorAnswer(new StoreUnavailableError(new Error('ECONNREFUSED 10.0.0.7:6379')));
    assert.equal(answer.status, 503);
    assert.equal(answer.body.error.code, 'TG_ERR_STORE_UNAVAILABLE');
    assert.equal(answer.headers['retry-after'], '2');
    assert.ok(!JSON.stringify(answer.body).includes('ECONNREFUSED'));
  });

  it('answers anything else as an internal error that keeps the library\'s message out of the body', () => {
    const answer = errorAnswer(new TypeError('Cannot read properties of undefined (reading \'handle\')'));
    assert.equal(answer.status, 500);
    assert.equal(answer.known, false);
    assert.deepEqual(answer.body, { error: { code: 'TG_ERR_INTERNAL', message: describeError('TG_ERR_INTERNAL').message } });
    assert.deepEqual(errorAnswer('a thrown string').body.error.code, 'TG_ERR_INTERNAL');
  });
});
