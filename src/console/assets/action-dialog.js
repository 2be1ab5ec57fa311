// The reason prompt every action goes through: a modal <dialog> with a required reason (and,
// for a suspension, how long). Resolves with what was entered, or undefined when dismissed.

const dialog = () => document.getElementById('action-dialog');

export function askForReason({ title, target, withDuration = false, run }) {
  const form = document.getElementById('action-form');
  const reason = document.getElementById('action-reason');
  const duration = document.getElementById('action-duration');
  const error = document.getElementById('action-error');
  document.getElementById('action-title').textContent = title;
  document.getElementById('action-target').textContent = target;
  document.getElementById('action-duration-field').hidden = !withDuration;
  reason.value = '';
  error.textContent = '';
  const opener = document.activeElement;
  return new Promise((resolve) => {
    const finish = (value) => {
      form.removeEventListener('submit', onSubmit);
      back.removeEventListener('click', onBack);
      dialog().removeEventListener('cancel', onBack);
      if (dialog().open) dialog().close();
      // Focus goes back where it was, so a keyboard user stays in the table.
      if (opener instanceof HTMLElement && opener.isConnected) opener.focus();
      resolve(value);
    };
    const onSubmit = async (event) => {
      event.preventDefault();
      const text = reason.value.trim();
      if (text === '') {
        error.textContent = 'A reason is required.';
        reason.focus();
        return;
      }
      const entered = { reason: text, ...(withDuration ? { duration: duration.value } : {}) };
      try {
        const outcome = await run(entered);
        finish(outcome);
      } catch (failure) {
        error.textContent = failure.message;
      }
    };
    const onBack = (event) => {
      event.preventDefault();
      finish(undefined);
    };
    const back = document.getElementById('action-back');
    form.addEventListener('submit', onSubmit);
    back.addEventListener('click', onBack);
    dialog().addEventListener('cancel', onBack);
    dialog().showModal();
    reason.focus();
  });
}
