// Plain-text tables with aligned columns.
#pragma once

#include <string>
#include <vector>

namespace coexec::cli {

class Table {
  public:
    enum class Align { Left, Right };
    struct Column {
        std::string header;
        Align align = Align::Left;
    };

    explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

    // Adds a row; missing cells print empty, extra cells are dropped.
    void add_row(std::vector<std::string> cells);

    // The header line then one line per row, columns two spaces apart,
    // without trailing blanks.
    std::vector<std::string> render() const;

  private:
    std::vector<Column> columns_;
    std::vector<std::vector<std::string>> rows_;
};

} // namespace coexec::cli
