/**
 * Something several policy snapshots use at once across a reload (an upstream's keep-alive
 * agent, an issuer's fetched key set): each snapshot that uses it holds it, and it is closed
 * when the last of them lets go. A snapshot lets go only once the requests that started on it
 * have finished, so a request never sees its connections or keys closed under it.
 */
export class SharedResource<T> {
  readonly value: T;
  private holders = 1;
  private readonly closeValue: (value: T) => Promise<void> | void;

  /** The creator holds it once. */
  constructor(value: T, closeValue: (value: T) => Promise<void> | void) {
    this.value = value;
    this.closeValue = closeValue;
  }

  /** One more holder (a new snapshot keeping it); returns this for chaining. */
  hold(): this {
    if (this.holders === 0) throw new Error('a closed resource cannot be held again');
    this.holders += 1;
    return this;
  }

  /** One holder lets go; the last one closes the value. */
  async release(): Promise<void> {
    if (this.holders === 0) return;
    this.holders -= 1;
    if (this.holders === 0) await this.closeValue(this.value);
  }

  get closed(): boolean {
    return this.holders === 0;
  }
}
