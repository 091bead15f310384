// Imported before everything but the locale: a library that throws as it loads would leave the
// page at "Loading…" with nothing said; this says why instead, until the console has started.
const root = document.getElementById('console');

function showFailure(event) {
  const problem = document.createElement('p');
  problem.className = 'error';
  problem.setAttribute('role', 'alert');
  problem.textContent = `The console could not start: ${event.message}`;
  root.replaceChildren(problem);
}

addEventListener('error', showFailure);

/** The console is up: its own views say what goes wrong from now on. */
export function started() {
  removeEventListener('error', showFailure);
}
