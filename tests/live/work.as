// asprof --serve's program: hot does three times cold's work, for arg(0) rounds; prints the
// value every round computes (the same, profiled or not).
int hot(int n) { int x = 0; for (int i = 1; i <= n; i++) x += i % 7; return x; }
int cold(int n) { int x = 0; for (int i = 1; i <= n; i++) x += i % 7; return x; }
void main() {
  uint rounds = parseUInt(arg(0));
  int first = 0;
  for (uint r = 0; r < rounds; r++) {
    int v = hot(300000) + cold(100000);
    if (r == 0) first = v;
    if (v != first) { print("a round computed another value\n"); return; }
  }
  print("result " + first + "\n");
}
