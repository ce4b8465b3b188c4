// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
// Small helpers for the sroce provider unit tests: temp trees, files,
// running a program with extra environment and capturing its output.
#ifndef SROCE_TEST_UTIL_HPP
#define SROCE_TEST_UTIL_HPP

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace sroce_test {

// Path from an environment variable "make unit" sets; skips the test
// when the binary runs outside make.
inline std::string env_path(const char *name)
{
	const char *v = getenv(name);
	return v ? v : "";
}

#define SROCE_REQUIRE_ENV(var, name)                                          \
	const std::string var = ::sroce_test::env_path(name);                \
	if (var.empty())                                                      \
		GTEST_SKIP() << name << " not set (run through 'make unit')"

inline void mkdirs(const std::string &path)
{
	std::string cur;
	std::stringstream ss(path);
	std::string part;
	if (!path.empty() && path[0] == '/')
		cur = "/";
	while (std::getline(ss, part, '/')) {
		if (part.empty())
			continue;
		cur += part + "/";
		mkdir(cur.c_str(), 0755);
	}
}

inline void write_file(const std::string &path, const std::string &content)
{
	mkdirs(path.substr(0, path.rfind('/')));
	std::ofstream f(path, std::ios::trunc);
	f << content;
}

inline std::string read_file(const std::string &path)
{
	std::ifstream f(path);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

// A directory removed (recursively) at scope exit.
class temp_dir {
public:
	temp_dir()
	{
		const char *base = getenv("TMPDIR");
		std::string tmpl = std::string(base && *base ? base : "/tmp") +
				   "/sroce-unit-XXXXXX";
		std::vector<char> buf(tmpl.begin(), tmpl.end());
		buf.push_back('\0');
		if (mkdtemp(buf.data()))
			path_ = buf.data();
	}
	~temp_dir()
	{
		if (!path_.empty() && !getenv("SROCE_KEEP_TMP")) {
			std::string cmd = "rm -rf '" + path_ + "'";
			if (system(cmd.c_str()) != 0) {
			}
		}
	}
	temp_dir(const temp_dir &) = delete;
	temp_dir &operator=(const temp_dir &) = delete;
	const std::string &path() const { return path_; }

private:
	std::string path_;
};

struct run_result {
	int status = -1;	// exit code, or 128+signal
	std::string out, err;
};

// Run argv[0] (PATH lookup) with the current environment plus `env`
// (an empty value unsets the variable).
inline run_result run(const std::vector<std::string> &argv,
		      const std::map<std::string, std::string> &env = {},
		      const std::string &cwd = "")
{
	run_result r;
	char out_tmpl[] = "/tmp/sroce-run-out-XXXXXX";
	char err_tmpl[] = "/tmp/sroce-run-err-XXXXXX";
	int out_fd = mkstemp(out_tmpl);
	int err_fd = mkstemp(err_tmpl);
	if (out_fd < 0 || err_fd < 0)
		return r;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(out_fd, 1);
		dup2(err_fd, 2);
		int null_fd = open("/dev/null", O_RDONLY);
		dup2(null_fd, 0);
		for (const auto &[k, v] : env) {
			if (v.empty())
				unsetenv(k.c_str());
			else
				setenv(k.c_str(), v.c_str(), 1);
		}
		if (!cwd.empty() && chdir(cwd.c_str()) != 0)
			_exit(126);
		std::vector<char *> args;
		for (const std::string &a : argv)
			args.push_back(const_cast<char *>(a.c_str()));
		args.push_back(nullptr);
		execvp(args[0], args.data());
		_exit(127);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r.out = read_file(out_tmpl);
	r.err = read_file(err_tmpl);
	close(out_fd);
	close(err_fd);
	unlink(out_tmpl);
	unlink(err_tmpl);
	return r;
}

inline bool contains(const std::string &hay, const std::string &needle)
{
	return hay.find(needle) != std::string::npos;
}

} // namespace sroce_test

#endif
