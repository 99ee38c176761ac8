[Thread debugging using libthread_db enabled]
Using host libthread_db library "/lib/x86_64-linux-gnu/libthread_db.so.1".
[==========] Running 13 tests from 3 test suites.
[----------] Global test environment set-up.
[----------] 6 tests from Config
[ RUN      ] Config.ParsesTypedBlocks
[       OK ] Config.ParsesTypedBlocks (0 ms)
[ RUN      ] Config.UnknownKeysNameFileAndSuggest

Program received signal SIGSEGV, Segmentation fault.
0x0000000000000000 in ?? ()
#0  0x0000000000000000 in ?? ()
#1  0x00007ffff7f35812 in std::filesystem::remove_all(std::filesystem::__cxx11::path const&) () from /opt/torch/.venv/lib/python3.12/site-packages/torch/lib/libtorch.so
#2  0x0000555555628faf in ?? ()
#3  0x0000555555619863 in ?? ()
#4  0x0000555555622d65 in ?? ()
#5  0x0000555555750ae7 in ?? ()
#6  0x0000555555741bae in ?? ()
#7  0x0000555555741d65 in ?? ()
#8  0x0000555555742309 in ?? ()
#9  0x00005555557476af in ?? ()
#10 0x0000555555751057 in ?? ()
#11 0x0000555555741e21 in ?? ()
#12 0x0000555555616142 in ?? ()
#13 0x00007fffc9e2a1ca in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#14 0x00007fffc9e2a28b in __libc_start_main () from /lib/x86_64-linux-gnu/libc.so.6
#15 0x0000555555618975 in ?? ()
