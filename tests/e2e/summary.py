"""Lines the e2e tests want in pytest's terminal summary (agreement counts):
pytest hides a passing test's own output, so they are printed at the end."""
LINES: list[str] = []


def add(line: str) -> None:
    LINES.append(line)
