"""A small progress bar for the examples: loss and speed, redrawn in place on a
terminal, one line per epoch otherwise."""
import sys
import time


class Progress(object):
    def __init__(self, total, title, unit='samples', width=24, stream=None):
        self.total, self.title, self.unit, self.width = total, title, unit, width
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        self.start = time.perf_counter()
        self.done = 0
        self.loss = float('nan')
        self._sum = 0.0

    def update(self, n, loss):
        self.done += n
        self._sum += float(loss) * n
        self.loss = self._sum / self.done  # the epoch's mean so far
        if self.tty:
            self.stream.write('\r' + self._line())
            self.stream.flush()

    def _line(self):
        frac = min(1.0, self.done / float(self.total or 1))
        fill = int(round(frac * self.width))
        secs = max(time.perf_counter() - self.start, 1e-9)
        return '%s [%s%s] loss %.4f  %.0f %s/s' % (self.title, '#' * fill, '.' * (self.width - fill),
                                                  self.loss, self.done / secs, self.unit)

    def close(self):
        self.stream.write(('\r' if self.tty else '') + self._line() + '\n')
        self.stream.flush()
