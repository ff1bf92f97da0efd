// The `register` storage class, removed in C++17 (the default language of clang++-16
// and g++-12).
int main() {
    register int sum = 0;
    for (register int i = 1; i <= 4; i++) sum += i;
    return sum == 10 ? 0 : 1;
}
